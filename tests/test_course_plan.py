"""The course plan lists every exercise of the book, and every page it runs has a class setting."""
import json
import re
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parents[1]
PLAN = REPO / "book" / "teaching" / "course_plan.md"


def exercise_labels() -> set[str]:
    labels = set()
    for path in [*REPO.glob("book/**/*.md"), *REPO.glob("book/**/*.ipynb")]:
        text = path.read_text(encoding="utf-8")
        if path.suffix == ".ipynb":
            text = "\n".join("".join(cell["source"]) for cell in json.loads(text)["cells"])
        labels.update(re.findall(r"\{exercise\}\s+:label: ([\w-]+)", text))
    return labels


def test_the_plan_lists_every_exercise():
    labels = exercise_labels()
    assert len(labels) >= 15
    listed = set(re.findall(r"\{ref\}`([\w-]+)`", PLAN.read_text(encoding="utf-8")))
    assert labels <= listed, f"exercises missing from the course plan: {sorted(labels - listed)}"
    assert listed <= labels, f"the course plan names exercises that do not exist: {sorted(listed - labels)}"


def test_every_page_the_plan_runs_has_a_class_setting():
    profiles = yaml.safe_load((REPO / "notebooks" / "profiles.yml").read_text())["profiles"]["class"]
    runs = re.findall(r"bertsent\.book run (\w+) --profile class", PLAN.read_text(encoding="utf-8"))
    assert runs and set(runs) <= set(profiles)
