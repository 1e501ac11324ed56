#!/usr/bin/env python3
"""dcpoison.py CACHE_DIR FILE [BLOCK_SIZE]: what a user who can write the
disk cache's files but not read its key does to it.  The block of the data
file holding FILE's first bytes is overwritten with "POISONED-BY-NOBODY"
and its journal record made to match as far as anyone without the key
can: the record's check of the data (a CRC32C in the PFJ1 journal of older
builds, the MAC's tag in PFJ2: set to the poison's CRC32C, a guess) and
the record's own CRC32C are recomputed.  Prints the slot poisoned; exits 1
if FILE's bytes are not in the cache."""
import struct
import sys

POLY = 0x82F63B78
TABLE = []
for i in range(256):
    c = i
    for _ in range(8):
        c = (c >> 1) ^ POLY if c & 1 else c >> 1
    TABLE.append(c)


def crc32c(data, crc=0):
    c = crc ^ 0xFFFFFFFF
    for b in data:
        c = (c >> 8) ^ TABLE[(c ^ b) & 0xFF]
    return c ^ 0xFFFFFFFF


FORMATS = {
    # magic: (record size, struct of the record without its CRC)
    0x314A4650: (48, "<IIQQQIII"),      # PFJ1: ... slot, len, dcrc
    0x324A4650: (64, "<IIQQQIIQQI"),    # PFJ2: ... slot, len, nonce, tag, pad
}


def main():
    cdir, path = sys.argv[1], sys.argv[2]
    bs = int(sys.argv[3]) if len(sys.argv) > 3 else 16384
    head = open(path, "rb").read(bs)
    data = open(cdir + "/data", "r+b")
    blob = data.read()
    off = blob.find(head[:256])
    while off >= 0 and off % bs:
        off = blob.find(head[:256], off + 1)
    if off < 0:
        print("the file's first block is not in the cache")
        sys.exit(1)
    slot = off // bs
    journal = open(cdir + "/journal", "r+b")
    j = journal.read()
    magic = struct.unpack_from("<I", j, 0)[0]
    size, fmt = FORMATS[magic]
    found = None
    for pos in range(0, len(j) - size + 1, size):
        rec = list(struct.unpack_from(fmt, j, pos))
        if rec[1] == 2 and rec[5] == slot:      # J_PUT of this slot
            found = pos
    if found is None:
        print("no journal record for slot %d" % slot)
        sys.exit(1)
    rec = list(struct.unpack_from(fmt, j, found))
    n = rec[6]
    poison = (b"POISONED-BY-NOBODY\n" * (n // 19 + 1))[:n]
    data.seek(off)
    data.write(poison)
    data.close()
    if magic == 0x314A4650:
        rec[7] = crc32c(poison)
    else:
        rec[8] = crc32c(poison)
    body = struct.pack(fmt, *rec)
    journal.seek(found)
    journal.write(body + struct.pack("<I", crc32c(body)))
    journal.close()
    print(slot)


main()
