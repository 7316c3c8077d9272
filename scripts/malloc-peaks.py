#!/usr/bin/env python3
"""Summarizes what scripts/malloc-peaks.sh recorded in OUT: the resident set's split at each step of
the peak, glibc's arenas at the last record (heap bytes, free chunks, the rest in use or the top
chunk) and, where --calls recorded them, the live allocations recorded by call site.

    scripts/malloc-peaks.py OUT [RECORD]   (RECORD: a record's number, default the last)
"""
import collections
import glob
import os
import re
import sys
import xml.etree.ElementTree as ET

MIB = float(1 << 20)


def arenas(path):
    """(arena number, heap bytes, free bytes, subheaps) of each arena in a malloc_info file."""
    for heap in ET.parse(path).getroot().findall("heap"):
        system = int(heap.find("system[@type='current']").get("size"))
        free = sum(int(total.get("size")) for total in heap.findall("total"))
        subheaps = heap.find("aspace[@type='subheaps']")
        yield heap.get("nr"), system, free, subheaps.get("size") if subheaps is not None else "main"


def call_sites(path, shown=12, frames=4):
    """The live allocations of a live.N.txt by their first frames, largest first."""
    bytes_at, count_at = collections.Counter(), collections.Counter()
    for line in open(path):
        fields = line.split()
        if not fields:
            continue
        site = " | ".join([f for f in fields[1:] if not f.startswith("libmalloc_peaks")][:frames])
        bytes_at[site] += int(fields[0])
        count_at[site] += 1
    total = sum(bytes_at.values())
    print(f"live allocations recorded: {total / MIB:.1f} MiB")
    for site, size in bytes_at.most_common(shown):
        print(f"  {size / MIB:8.1f} MiB {count_at[site]:5d}x  {site[:200]}")


def main():
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    out = sys.argv[1]
    breakdown = os.path.join(out, "breakdown.txt")
    if os.path.exists(breakdown):
        print(open(breakdown).read().rstrip())
    records = sorted(glob.glob(os.path.join(out, "mi.*.xml")), key=lambda p: int(re.search(r"mi\.(\d+)\.", p).group(1)))
    if not records:
        sys.exit("no records in " + out + ": the process's peak never grew by a step")
    pick = records[-1] if len(sys.argv) < 3 else next(p for p in records if re.search(r"mi\.0*%d\." % int(sys.argv[2]), p))
    print("glibc arenas at", os.path.basename(pick), "(in use: live chunks and each arena's top chunk)")
    heaps = frees = 0
    for number, system, free, subheaps in arenas(pick):
        heaps, frees = heaps + system, frees + free
        if system >= MIB:
            print(f"  arena {number:>2}: heaps {system / MIB:7.1f} MiB, free {free / MIB:6.1f}, in use {(system - free) / MIB:7.1f} (heaps: {subheaps})")
    print(f"  all arenas: heaps {heaps / MIB:.1f} MiB, free {frees / MIB:.1f}, in use {(heaps - frees) / MIB:.1f}")
    live = pick.replace("/mi.", "/live.").replace(".xml", ".txt")
    if os.path.exists(live):
        call_sites(live)


if __name__ == "__main__":
    main()
