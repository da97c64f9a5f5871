"""Print pip constraints that pin each runtime dependency to the lowest version pyproject.toml allows.

CI's lowest-versions job installs with them (PIP_CONSTRAINT), so a lower bound is a tested claim.
"""

from __future__ import annotations

import re
import sys
import tomllib


def lowest(requirements: list[str]) -> list[str]:
    pins = []
    for requirement in requirements:
        found = re.fullmatch(r"([A-Za-z0-9_.-]+)(?:\[[^\]]*\])?\s*>=\s*([0-9][^,;\s]*).*", requirement)
        if found:
            pins.append(f"{found.group(1)}=={found.group(2)}")
    return pins


def main() -> None:
    with open(sys.argv[1] if len(sys.argv) > 1 else "pyproject.toml", "rb") as file:
        project = tomllib.load(file)["project"]
    requirements = list(project["dependencies"]) + list(project["optional-dependencies"]["mcp"])
    print("\n".join(lowest(requirements)))


if __name__ == "__main__":
    main()
