"""The build backend of the prefetchfs Python package (PEP 517, PEP 660).

Standard library only, and in the source tree (pyproject.toml's
backend-path), so that building needs nothing from a package index:

    pip install --no-index ./python

works on a machine that reaches no index at all, in a fresh virtual
environment or outside one.  (With setuptools as the backend pip would
first install setuptools into an isolated build environment, from an
index.)  The package is pure Python: a wheel is a zip of its files with
a .dist-info directory (METADATA, WHEEL, RECORD).

Run as a program it lays the package out where make install and the .deb
put it, with the same .dist-info, so that importlib.metadata and `pip
list` know it:

    python3 python/_backend/prefetchfs_build.py install SITEDIR [INSTALLER]
"""
import base64
import hashlib
import io
import os
import re
import sys
import tarfile
import zipfile

HERE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PACKAGE = "prefetchfs"
# zip and tar entries get one fixed time: the same tree, the same wheel
EPOCH = int(os.environ.get("SOURCE_DATE_EPOCH", 315532800))


def _project():
    """[project] of pyproject.toml, and the version from __init__.py."""
    path = os.path.join(HERE, "pyproject.toml")
    try:
        import tomllib
        with open(path, "rb") as f:
            proj = dict(tomllib.load(f)["project"])
    except ImportError:         # Python < 3.11: its simple keys suffice
        proj = {}
        section = None
        with open(path, encoding="utf-8") as f:
            for line in f:
                m = re.match(r"^\[(.*)\]\s*$", line)
                if m:
                    section = m.group(1)
                    continue
                m = re.match(r'^([a-z-]+)\s*=\s*"(.*)"\s*$', line)
                if section == "project" and m:
                    proj[m.group(1)] = m.group(2)
    with open(os.path.join(HERE, PACKAGE, "__init__.py"),
              encoding="utf-8") as f:
        m = re.search(r'^__version__ = "([^"]+)"$', f.read(), re.M)
    proj["version"] = m.group(1)
    return proj


def _dist_info():
    p = _project()
    return "%s-%s.dist-info" % (p["name"], p["version"])


def _metadata():
    p = _project()
    lines = ["Metadata-Version: 2.1", "Name: " + p["name"],
             "Version: " + p["version"]]
    if "description" in p:
        lines.append("Summary: " + p["description"])
    if "requires-python" in p:
        lines.append("Requires-Python: " + p["requires-python"])
    lic = p.get("license")
    if isinstance(lic, dict) and "text" in lic:
        lines.append("License: " + lic["text"])
    for k, v in sorted(p.get("urls", {}).items()):
        lines.append("Project-URL: %s, %s" % (k, v))
    return ("\n".join(lines) + "\n").encode()


WHEEL = (b"Wheel-Version: 1.0\nGenerator: prefetchfs_build\n"
         b"Root-Is-Purelib: true\nTag: py3-none-any\n")


def _sources():
    """(path in the wheel, bytes) of every module of the package."""
    d = os.path.join(HERE, PACKAGE)
    for name in sorted(os.listdir(d)):
        if name.endswith(".py"):
            with open(os.path.join(d, name), "rb") as f:
                yield PACKAGE + "/" + name, f.read()


def _record_line(name, data):
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest())
    return "%s,sha256=%s,%d\n" % (name, digest.rstrip(b"=").decode(),
                                  len(data))


def _files(editable=False, installer=None):
    """Every file of the wheel (or of an installation) but RECORD."""
    di = _dist_info()
    if editable:
        files = [(PACKAGE + ".pth", (HERE + "\n").encode())]
    else:
        files = list(_sources())
    files += [(di + "/METADATA", _metadata()), (di + "/WHEEL", WHEEL),
              (di + "/top_level.txt", (PACKAGE + "\n").encode())]
    if installer:
        files.append((di + "/INSTALLER", (installer + "\n").encode()))
    return files


def _with_record(files):
    record = _dist_info() + "/RECORD"
    text = "".join(_record_line(n, d) for n, d in files) + record + ",,\n"
    return files + [(record, text.encode())]


def _wheel(directory, editable):
    p = _project()
    name = "%s-%s-py3-none-any.whl" % (p["name"], p["version"])
    with zipfile.ZipFile(os.path.join(directory, name), "w",
                         zipfile.ZIP_DEFLATED) as z:
        for n, d in _with_record(_files(editable)):
            info = zipfile.ZipInfo(n, _date_time())
            info.external_attr = 0o644 << 16
            info.compress_type = zipfile.ZIP_DEFLATED
            z.writestr(info, d)
    return name


def _date_time():
    import time
    return time.gmtime(max(EPOCH, 315532800))[:6]


def _prepare(directory):
    di = os.path.join(directory, _dist_info())
    os.makedirs(di, exist_ok=True)
    for n, d in _files():
        if n.startswith(_dist_info() + "/"):
            with open(os.path.join(directory, n), "wb") as f:
                f.write(d)
    return _dist_info()


# ---- PEP 517 / PEP 660 hooks ------------------------------------------

def get_requires_for_build_wheel(config_settings=None):
    return []


def get_requires_for_build_sdist(config_settings=None):
    return []


def get_requires_for_build_editable(config_settings=None):
    return []


def prepare_metadata_for_build_wheel(metadata_directory,
                                     config_settings=None):
    return _prepare(metadata_directory)


def prepare_metadata_for_build_editable(metadata_directory,
                                        config_settings=None):
    return _prepare(metadata_directory)


def build_wheel(wheel_directory, config_settings=None,
                metadata_directory=None):
    return _wheel(wheel_directory, editable=False)


def build_editable(wheel_directory, config_settings=None,
                   metadata_directory=None):
    return _wheel(wheel_directory, editable=True)


def build_sdist(sdist_directory, config_settings=None):
    p = _project()
    base = "%s-%s" % (p["name"], p["version"])
    name = base + ".tar.gz"
    members = [("pyproject.toml", None), ("_backend/prefetchfs_build.py",
                                          None)]
    members += [(n, d) for n, d in _sources()]
    members.append(("PKG-INFO", _metadata()))
    with tarfile.open(os.path.join(sdist_directory, name), "w:gz",
                      format=tarfile.PAX_FORMAT) as t:
        for n, d in members:
            if d is None:
                with open(os.path.join(HERE, n), "rb") as f:
                    d = f.read()
            info = tarfile.TarInfo(base + "/" + n)
            info.size = len(d)
            info.mtime = EPOCH
            info.mode = 0o644
            t.addfile(info, io.BytesIO(d))
    return name


# ---- make install -----------------------------------------------------

def install(sitedir, installer="make"):
    """Writes the package and its .dist-info into sitedir."""
    for n, d in _with_record(_files(installer=installer)):
        path = os.path.join(sitedir, n)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path + ".tmp", "wb") as f:
            f.write(d)
        os.chmod(path + ".tmp", 0o644)
        os.replace(path + ".tmp", path)


if __name__ == "__main__":
    if len(sys.argv) in (3, 4) and sys.argv[1] == "install":
        install(*sys.argv[2:])
    elif len(sys.argv) == 2 and sys.argv[1] == "dist-info":
        print(_dist_info())
    else:
        sys.exit("usage: %s install SITEDIR [INSTALLER] | dist-info"
                 % sys.argv[0])
