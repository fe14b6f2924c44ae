#!/usr/bin/env python3
"""Checks that every dependency between detdb's folders points one way.

    proto, common -> io -> storage, lockmgr, sequencer -> scheduler
      -> workloads (micro, tpcc) -> client -> deploy -> bench

Two kinds of edges are read from the tree, with no build needed:
  * include lines: a file in folder A may include "B/..." only if A may
    depend on B (tests included: a folder's tests use what the folder may);
  * CMake: a folder's CMakeLists.txt may name only detdb targets defined in
    folders it may depend on.
Exits 1 and names every offending line; CTest runs it as `layering`.
Usage: check_layering.py [REPO_ROOT]
"""
import os
import re
import sys

# Each folder and the folders it may depend on directly; what those may
# depend on is allowed too (the closure is computed below).
ALLOWED = {
    "proto": [],
    "common": [],
    "io": ["common"],
    "storage": ["common", "proto", "io"],
    "lockmgr": ["common", "proto"],
    "sequencer": ["common", "proto", "io"],
    "scheduler": ["storage", "lockmgr", "sequencer"],
    "workloads/micro": ["scheduler"],
    "workloads/tpcc": ["scheduler"],
    "client": ["common", "proto"],
    "deploy": ["workloads/micro", "workloads/tpcc", "client"],
    "bench": ["deploy"],
}
SOURCE_EXT = (".h", ".cc", ".cpp", ".hpp")
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"')
TARGET_DEF = re.compile(r'^\s*(?:add_library|add_executable|detdb_test)\s*\(\s*([A-Za-z0-9_\-]+)', re.M)
TARGET_REF = re.compile(r'\b(detdb_[A-Za-z0-9_]+)\b')


def closure():
    out = {}
    def visit(f, seen):
        for d in ALLOWED[f]:
            if d not in seen:
                seen.add(d)
                visit(d, seen)
        return seen
    for f in ALLOWED:
        out[f] = visit(f, {f})
    return out


def folder_of(path):
    """The layered folder a repo-relative path belongs to, or None."""
    best = None
    for f in ALLOWED:
        if path == f or path.startswith(f + "/"):
            if best is None or len(f) > len(best):
                best = f
    return best


def main():
    root = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), ".."))
    may = closure()
    errors = []
    targets = {}  # target name -> folder that defines it
    cmake_files = []
    for f in ALLOWED:
        base = os.path.join(root, f)
        if not os.path.isdir(base):
            errors.append(f"missing folder {f}/")
            continue
        for dirpath, dirnames, filenames in os.walk(base):
            dirnames[:] = [d for d in dirnames if not d.startswith(".")]
            for name in filenames:
                path = os.path.join(dirpath, name)
                rel = os.path.relpath(path, root)
                owner = folder_of(rel)
                if name == "CMakeLists.txt":
                    cmake_files.append((rel, owner))
                    with open(path, encoding="utf-8") as fh:
                        for m in TARGET_DEF.finditer(fh.read()):
                            targets[m.group(1)] = owner
                    continue
                if not name.endswith(SOURCE_EXT):
                    continue
                with open(path, encoding="utf-8", errors="replace") as fh:
                    for lineno, line in enumerate(fh, 1):
                        m = INCLUDE.match(line)
                        if not m:
                            continue
                        dep = folder_of(m.group(1))
                        if dep is not None and dep not in may[owner]:
                            errors.append(f"{rel}:{lineno}: {owner}/ includes {m.group(1)} ({dep}/ is above it)")
    for rel, owner in cmake_files:
        with open(os.path.join(root, rel), encoding="utf-8") as fh:
            for lineno, line in enumerate(fh, 1):
                code = line.split("#", 1)[0]
                for m in TARGET_REF.finditer(code):
                    dep = targets.get(m.group(1))
                    if dep is not None and dep not in may[owner]:
                        errors.append(f"{rel}:{lineno}: {owner}/ links {m.group(1)} (defined in {dep}/, above it)")
    if errors:
        print("layering: dependencies that run against proto, common -> storage, lockmgr -> sequencer -> "
              "scheduler -> workloads -> client -> deploy -> bench:")
        for e in errors:
            print("  " + e)
        return 1
    print(f"layering: ok ({len(ALLOWED)} folders, {len(targets)} targets)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
