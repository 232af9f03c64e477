#!/usr/bin/env python3
"""Writes tests/fuzz/scenario.dict from `podsim describe --json`.

usage: tests/fuzz/make_dict.py PODSIM [--out FILE]

The dictionary holds what lets libFuzzer's mutations reach deep into the
reader: every key name of the scenario and validation schemas ("key":), every
enumerated value and preset name ("value"), every unit a quantity takes
(" GiB"), and a few numbers at the edges of double and integer parsing.
Run it (`tools/fuzz dict`) whenever a key, a value or a preset changes.
"""
import argparse
import json
import re
import subprocess

# Numbers at the edges of what the reader parses: the largest and smallest
# doubles, negative zero, 2^32 and 2^63.
EDGE_NUMBERS = ["1e308", "5e-324", "-0", "4294967296", "9223372036854775808"]


def listed_values(allowed):
    """The words of an 'allowed' text that enumerates choices or presets."""
    text = allowed
    for prefix in ("presets: ", "permutation of "):
        if text.startswith(prefix):
            text = text[len(prefix):]
    text = re.sub(r" or an object$", "", text).replace(" or ", ", ")
    words = [w.strip() for w in text.split(",")]
    if not words or not all(re.fullmatch(r"[A-Za-z0-9_.\-]+", w) for w in words):
        return []
    return words


def entry(text):
    """A dictionary line: the text quoted, bytes outside printable ASCII escaped."""
    out = []
    for byte in text.encode("utf-8"):
        if byte == 0x22 or byte == 0x5C:
            out.append("\\" + chr(byte))
        elif 0x20 <= byte < 0x7F:
            out.append(chr(byte))
        else:
            out.append(f"\\x{byte:02X}")
    return '"' + "".join(out) + '"'


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("podsim")
    parser.add_argument("--out", default="tests/fuzz/scenario.dict")
    args = parser.parse_args()
    described = json.loads(
        subprocess.run([args.podsim, "describe", "--json"], check=True,
                       capture_output=True, text=True).stdout)
    keys, values = set(), set()
    for schema in ("scenario", "validation"):
        for decl in described[schema]:
            name = decl["path"].rsplit("/", 1)[-1]
            if name and name != "*":
                keys.add(name)
            values.update(listed_values(decl["allowed"]))
    units = {u["unit"] for u in described["units"]}
    lines = [
        "# libFuzzer dictionary: the scenario keys, enum values, presets and units",
        "# (written by tests/fuzz/make_dict.py from `podsim describe --json`:",
        "# `tools/fuzz dict` after a key, a value or a preset changes).",
    ]
    lines += [entry(f'"{k}":') for k in sorted(keys)]
    lines += [entry(f'"{v}"') for v in sorted(values)]
    lines += [entry(f" {u}") for u in sorted(units)]
    lines += [entry(n) for n in EDGE_NUMBERS]
    with open(args.out, "w", encoding="ascii") as f:
        f.write("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
