"""The install paths agree with each other and with the README."""
import re

import yaml

from bertsent.paths import REPO_ROOT


def requirement_lines(path):
    return [line.strip() for line in (REPO_ROOT / path).read_text().splitlines()
            if line.strip() and not line.startswith("#")]


def test_environment_yml_lists_the_same_packages_as_requirements():
    env = yaml.safe_load((REPO_ROOT / "environment.yml").read_text())
    pip = next(d["pip"] for d in env["dependencies"] if isinstance(d, dict))
    assert pip[:2] == ["--extra-index-url https://download.pytorch.org/whl/cpu", "torch==2.13.0"]  # the CPU build first
    assert sorted(pip[2:]) == sorted(requirement_lines("requirements.txt"))


def test_no_bare_torch_requirement():
    for path in ("requirements.txt", "requirements-nodeps.txt"):
        assert not any(re.match(r"torch\b", line) for line in requirement_lines(path))
    makefile = (REPO_ROOT / "Makefile").read_text()
    assert makefile.index("TORCH_SPEC)") < makefile.index("-r requirements.txt")
    # the pinned version is taken from PyTorch's CPU index, whose local version (+cpu) outranks PyPI's CUDA build
    assert "TORCH_INDEX ?= https://download.pytorch.org/whl/cpu" in makefile
    assert '--extra-index-url $(TORCH_INDEX),) "$(TORCH_SPEC)"' in makefile


def test_readme_starts_with_the_two_commands_and_ci_runs_the_second():
    readme = (REPO_ROOT / "README.md").read_text()
    commands = re.findall(r"```(?:bash|sh)?\n(.*?)```", readme, re.S)[0].split("\n")
    commands = [c.split("#")[0].strip() for c in commands if c.strip()]
    assert commands[:2] == ["make book", "make test"]
    ci = [line for line in (REPO_ROOT / ".ci/run").read_text().splitlines() if line and not line.startswith(("#", "set ", "cd "))]
    assert ci == ["make test"]
