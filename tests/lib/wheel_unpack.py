#!/usr/bin/env python3
"""wheel_unpack.py - install a wheel by unzipping it, as pip would, checking
its RECORD: for interpreters whose venv has no pip (Debian sid's 3.14 and
3.15 come without ensurepip), used by tests/e2e/install.bats.

    wheel_unpack.py WHEEL SITE_PACKAGES PREFIX

Every file lands under SITE_PACKAGES, but NAME.data/data/X under PREFIX/X
and NAME.data/scripts/X under PREFIX/bin/X (PEP 427); a file with an
executable mode in the zip is made executable. Every file must be listed in
the .dist-info's RECORD with its sha256 and size, and RECORD must list
nothing else: exit status 1 otherwise. Console entry points are not made
into commands (`python -m pyprof` is the way in there).
"""
import base64
import hashlib
import os
import sys
import zipfile


def main():
    whl, site, prefix = sys.argv[1:4]
    z = zipfile.ZipFile(whl)
    names = [i.filename for i in z.infolist() if not i.filename.endswith("/")]
    recs = [n for n in names if n.endswith(".dist-info/RECORD")]
    if len(recs) != 1:
        sys.exit("wheel_unpack: %d RECORD files" % len(recs))
    listed = {}
    for line in z.read(recs[0]).decode().splitlines():
        path, digest, size = line.rsplit(",", 2)
        listed[path] = (digest, size)
    bad = []
    for info in z.infolist():
        n = info.filename
        if n.endswith("/"):
            continue
        data = z.read(info)
        if n != recs[0]:
            d = base64.urlsafe_b64encode(hashlib.sha256(data).digest())
            want = ("sha256=" + d.rstrip(b"=").decode(), str(len(data)))
            if listed.get(n) != want:
                bad.append("%s: RECORD says %s, the file is %s"
                           % (n, listed.get(n), want))
        parts = n.split("/")
        if parts[0].endswith(".data") and parts[1] == "data":
            dst = os.path.join(prefix, *parts[2:])
        elif parts[0].endswith(".data") and parts[1] == "scripts":
            dst = os.path.join(prefix, "bin", *parts[2:])
        else:
            dst = os.path.join(site, *parts)
        os.makedirs(os.path.dirname(dst), exist_ok=True)
        with open(dst, "wb") as f:
            f.write(data)
        if (info.external_attr >> 16) & 0o111:
            os.chmod(dst, 0o755)
    extra = set(listed) - set(names)
    bad += ["RECORD lists %s, not in the wheel" % n for n in sorted(extra)]
    if bad:
        print("\n".join(bad))
        sys.exit(1)
    print("installed %d files" % len(names))


if __name__ == "__main__":
    main()
