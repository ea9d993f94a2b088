"""The layers the code has, pinned: core -> wire -> {workers, services, client}, no arrow back
up or sideways. A file of a tier may include its own tier and the tiers below it; only tests
(`*_test.cc`, `*_test_util.*`, `fuzz/`) may reach a sibling tier (the coordinator's tests run
real workers in process). docs/architecture.md draws the same picture."""
import os
import re
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
OUR_TIERS = {"core", "wire", "workers", "services", "client", "tools"}
# Each tier's allowed project tiers (besides third-party headers such as absl/ or grpcpp/).
ALLOWED = {
    "core": {"core"},
    "wire": {"core", "wire"},
    "workers": {"core", "wire", "workers"},
    "services": {"core", "wire", "services"},
    "client": {"core", "wire", "client"},
    "tools": {"core", "tools"},
}
TEST_REACH = {"services": {"workers"}}
INCLUDE = re.compile(r'^\s*#\s*include\s+"([a-z_]+)/')


def is_test_file(path):
    name = os.path.basename(path)
    return (name.endswith("_test.cc") or "_test_util." in name or "/fuzz/" in path)


def violations():
    found = []
    for tier in sorted(ALLOWED):
        for folder, _, files in os.walk(os.path.join(ROOT, tier)):
            for name in files:
                if not name.endswith((".cc", ".h")):
                    continue
                path = os.path.join(folder, name)
                rel = os.path.relpath(path, ROOT)
                allowed = set(ALLOWED[tier])
                if is_test_file(rel):
                    allowed |= TEST_REACH.get(tier, set())
                with open(path, encoding="utf-8") as f:
                    for number, line in enumerate(f, 1):
                        m = INCLUDE.match(line)
                        if m and m.group(1) in OUR_TIERS and m.group(1) not in allowed:
                            found.append(f"{rel}:{number}: {tier} includes {m.group(1)}/")
    return found


def main():
    bad = violations()
    for line in bad:
        print(line)
    # The rule itself must be able to fail: a workers/ file including services/ is caught.
    probe = INCLUDE.match('#include "services/coordinator/coordinator.h"')
    rule_bites = probe is not None and probe.group(1) not in ALLOWED["workers"]
    passed = int(not bad) + int(rule_bites)
    print(f"{passed} passed, {2 - passed} failed")
    return 0 if passed == 2 else 1


if __name__ == "__main__":
    sys.exit(main())
