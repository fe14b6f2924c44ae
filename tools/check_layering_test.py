#!/usr/bin/env python3
"""Self-test of check_layering.py: the tree passes, and each kind of upward
dependency injected into a copy of it is caught. CTest: `layering_selftest`."""
import os
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
CHECK = os.path.join(HERE, "check_layering.py")

CASES = [
    ("scheduler/scheduler.cc", '#include "bench/micro_runner.h"\n'),
    ("scheduler/scheduler.cc", "#include <bench/micro_runner.h>\n"),
    ("scheduler/scheduler.cc", '#include "../bench/micro_runner.h"\n'),
    ("storage/table.h", '#include "lockmgr/lock_manager.h"\n'),
    ("client/client.cc", '#include "deploy/node.h"\n'),
    ("workloads/tpcc/loader.cc", '#include "workloads/micro/micro.h"\n'),
    ("scheduler/CMakeLists.txt", "target_link_libraries(detdb_scheduler PUBLIC detdb_micro)\n"),
    ("workloads/micro/CMakeLists.txt", "target_link_libraries(detdb_scheduler PUBLIC detdb_micro)\n"),
    ("CMakeLists.txt", "target_link_libraries(detdb_storage PUBLIC detdb_scheduler)\n"),
    ("scheduler/CMakeLists.txt", "add_dependencies(detdb_scheduler detdb-bench)\n"),
    ("scheduler/CMakeLists.txt", 'target_compile_definitions(detdb_scheduler PRIVATE X="$<TARGET_FILE:detdb>")\n'),
    ("scheduler/CMakeLists.txt", "target_sources(detdb_scheduler PRIVATE ${PROJECT_SOURCE_DIR}/workloads/micro/micro.cc)\n"),
    ("newfolder/x.cc", "int x;\n"),
]


def run(root):
    return subprocess.run([sys.executable, CHECK, root], capture_output=True, text=True)


def main():
    repo = sys.argv[1] if len(sys.argv) > 1 else os.path.join(HERE, "..")
    base = run(repo)
    if base.returncode != 0:
        print("the tree itself fails the check:\n" + base.stdout)
        return 1
    failures = 0
    with tempfile.TemporaryDirectory() as tmp:
        src = os.path.join(tmp, "src")
        shutil.copytree(repo, src, ignore=shutil.ignore_patterns(".git", "build*", "docs"))
        for path, line in CASES:
            target = os.path.join(src, path)
            os.makedirs(os.path.dirname(target), exist_ok=True)
            before = open(target).read() if os.path.exists(target) else None
            with open(target, "a") as f:
                f.write(line)
            r = run(src)
            if r.returncode == 0:
                print(f"NOT CAUGHT: {line.strip()} in {path}")
                failures += 1
            if before is None:
                os.remove(target)
            else:
                with open(target, "w") as f:
                    f.write(before)
    print(f"{len(CASES) - failures} passed, {failures} failed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
