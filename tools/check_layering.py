#!/usr/bin/env python3
"""Checks that every dependency between detdb's folders points one way.

    proto, common -> io -> storage, lockmgr, sequencer -> scheduler
      -> workloads (micro, tpcc, kv) -> client -> deploy -> bench

Read from the tree, with no build needed:
  * include lines, in every form ("a/b.h", <a/b.h>, "../a/b.h"): a file in
    folder A may include a file of folder B only if A may depend on B (tests
    too: a folder's tests use only what the folder may);
  * CMake: every target (add_library, add_executable, detdb_test) belongs to
    the folder whose CMakeLists.txt defines it; target_link_libraries,
    add_dependencies, target_sources and $<TARGET_...:t> edges are charged
    to the folder that owns the target they act on, wherever they are
    written; source paths named in CMake (${PROJECT_SOURCE_DIR}/x/...,
    ../x/...) count as edges too;
  * every source or CMake file lives in a known folder (a new folder must be
    added to ALLOWED below, i.e. placed in the order).
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
    "workloads/kv": ["scheduler"],
    "client": ["common", "proto"],
    "deploy": ["workloads/micro", "workloads/tpcc", "workloads/kv", "client"],
    "bench": ["deploy"],
    # libFuzzer targets (docs/FUZZING.md): may use every folder; none uses it.
    "fuzz": ["bench"],
}
# Files outside ALLOWED's folders: the top-level build files (which only
# add the folders and define helpers), the checker itself, docs.
TOP = "."
IGNORED_DIRS = {".git", "docs", "tools"}
SOURCE_EXT = (".h", ".hh", ".hpp", ".cc", ".cpp", ".cxx", ".c", ".inc", ".ipp", ".tcc", ".proto")
INCLUDE = re.compile(r'^\s*#\s*include\s*[<"]([^>"]+)[>"]')
PROTO_IMPORT = re.compile(r'^\s*import\s+"([^"]+)"')
CMAKE_DEF = re.compile(r'\b(?:add_library|add_executable|detdb_test)\s*\(\s*([A-Za-z0-9_.+\-]+)')
CMAKE_EDGE = re.compile(r'\b(target_link_libraries|add_dependencies|target_sources|target_include_directories)'
                        r'\s*\(([^)]*)\)', re.S)
GENEX = re.compile(r'\$<TARGET_[A-Z_]+:([A-Za-z0-9_.+\-]+)>')
CMAKE_PATH = re.compile(r'(?:\$\{(?:PROJECT|CMAKE)_SOURCE_DIR\}|\$\{CMAKE_CURRENT_SOURCE_DIR\}/\.\.|\.\.)/'
                        r'([A-Za-z0-9_]+(?:/[A-Za-z0-9_]+)?)')


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
    path = os.path.normpath(path)
    best = None
    for f in ALLOWED:
        if path == f or path.startswith(f + "/"):
            if best is None or len(f) > len(best):
                best = f
    return best


def strip_cmake_comment(line):
    out, quoted = [], False
    for ch in line:
        if ch == '"':
            quoted = not quoted
        if ch == "#" and not quoted:
            break
        out.append(ch)
    return "".join(out)


def main():
    root = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), ".."))
    may = closure()
    errors = []
    targets = {}      # target name -> folder that defines it (TOP for the top level)
    cmake_files = []  # (rel, folder, text without comments)
    for f in ALLOWED:
        if not os.path.isdir(os.path.join(root, f)):
            errors.append(f"missing folder {f}/")
    for dirpath, dirnames, filenames in os.walk(root):
        rel_dir = os.path.relpath(dirpath, root)
        dirnames[:] = sorted(d for d in dirnames
                             if not d.startswith(".") and not d.startswith("build")
                             and not (rel_dir == "." and d in IGNORED_DIRS))
        for name in sorted(filenames):
            rel = os.path.normpath(os.path.join(rel_dir, name))
            owner = folder_of(rel)
            is_cmake = name == "CMakeLists.txt" or name.endswith(".cmake")
            if not is_cmake and not name.endswith(SOURCE_EXT):
                continue
            if owner is None:
                if is_cmake and rel_dir in (".", "workloads"):
                    owner = TOP
                else:
                    errors.append(f"{rel}: not in a known folder (add its folder to ALLOWED in tools/check_layering.py)")
                    continue
            with open(os.path.join(root, rel), encoding="utf-8", errors="replace") as fh:
                text = fh.read()
            if is_cmake:
                clean = "\n".join(strip_cmake_comment(l) for l in text.splitlines())
                cmake_files.append((rel, owner, clean))
                for m in CMAKE_DEF.finditer(clean):
                    targets[m.group(1)] = owner
                continue
            pattern = PROTO_IMPORT if name.endswith(".proto") else INCLUDE
            for lineno, line in enumerate(text.splitlines(), 1):
                m = pattern.match(line)
                if not m:
                    continue
                inc = m.group(1)
                dep = None
                if inc.startswith("."):
                    dep = folder_of(os.path.join(os.path.dirname(rel), inc))
                else:
                    dep = folder_of(inc)
                if dep is not None and dep not in may[owner]:
                    errors.append(f"{rel}:{lineno}: {owner}/ includes {inc} ({dep}/ is above it)")

    def check(rel, text, pos, acting, dep, what):
        if acting is None or dep is None or acting == TOP or dep == TOP:
            return
        if dep not in may[acting]:
            lineno = text.count("\n", 0, pos) + 1
            errors.append(f"{rel}:{lineno}: {acting}/ {what} ({dep}/ is above it)")

    for rel, owner, text in cmake_files:
        for m in CMAKE_EDGE.finditer(text):
            words = m.group(2).split()
            if not words:
                continue
            acting = targets.get(words[0], owner)
            for w in words[1:]:
                for g in GENEX.finditer(w):
                    check(rel, text, m.start(), acting, targets.get(g.group(1)), f"uses target {g.group(1)}")
                if w in targets:
                    check(rel, text, m.start(), acting, targets[w], f"{m.group(1)} {words[0]} -> {w}")
        for m in GENEX.finditer(text):
            check(rel, text, m.start(), owner, targets.get(m.group(1)), f"uses target {m.group(1)}")
        for m in CMAKE_PATH.finditer(text):
            dep = folder_of(m.group(1)) or folder_of(m.group(1).split("/")[0])
            if owner == TOP:
                continue
            check(rel, text, m.start(), owner, dep, f"names a path in {m.group(1)}/")
    if errors:
        print("layering: dependencies that run against proto, common -> io -> storage, lockmgr, sequencer -> "
              "scheduler -> workloads -> client -> deploy -> bench:")
        for e in errors:
            print("  " + e)
        return 1
    print(f"layering: ok ({len(ALLOWED)} folders, {len(targets)} targets)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
