"""The capstone's leaderboard: the class ranked by held-out accuracy, as a table and a picture of accuracy against size.

Each capstone result that autograde keeps (OUT/results/<student>/16_capstone.json) holds what its hidden test measured
(`measured`: the held-out accuracy and the model's numbers, grading.grade.heldout.record). `write` ranks them, the
better accuracy first and the smaller model first among equals, into OUT/leaderboard.md and OUT/leaderboard.png; a
submission whose model was never measured (it failed a rule first) is listed last, with its first failed test.

    python -m grading leaderboard OUT     # OUT: autograde's --out folder; prints the table
"""

import io
import json
import textwrap
from pathlib import Path

from ..common.errors import GradingError
from ..common.layout import LEADERBOARD_PICTURE, LEADERBOARD_TABLE, RESULTS
from ..common.notebooks import write_atomic

ASSIGNMENT = "16_capstone"
TABLE, PICTURE = LEADERBOARD_TABLE, LEADERBOARD_PICTURE


def rows_of(out: Path) -> list:
    "[(student, accuracy or None, numbers or None, score, max score, why not measured)], ranked."
    rows = []
    for path in sorted((out / RESULTS).glob(f"*/{ASSIGNMENT}.json")):
        result = json.loads(path.read_text())
        measured = result.get("measured", {})
        failed = [f"{t}: {r['message']}" for t, r in result["tests"].items() if r["score"] < r["max_score"]]
        why = (
            "" if measured else textwrap.shorten(failed[0] if failed else result.get("note", ""), 120, placeholder="…")
        )
        score = (result["score"], result["max_score"])
        rows.append((path.parent.name, measured.get("accuracy"), measured.get("parameters"), *score, why))
    return sorted(rows, key=lambda row: (row[1] is None, -(row[1] or 0), row[2] or 0, row[0]))


def table(rows: list) -> str:
    lines = ["| rank | student | held-out accuracy | numbers | points |", "|---:|---|---:|---:|---:|"]
    for rank, (student, accuracy, size, score, most, why) in enumerate(rows, 1):
        if accuracy is None:
            lines.append(f"| – | {student} | not measured: {why.replace('|', '/')} | | {score:g} / {most:g} |")
        else:
            lines.append(f"| {rank} | {student} | {accuracy:.3f} | {size:,} | {score:g} / {most:g} |")
    return "\n".join(lines) + "\n"


def draw(rows: list, path: Path, bars: tuple, bound: int) -> None:
    "Accuracy against numbers, one point a student, with the hidden tests' bars and the bound on numbers."
    import matplotlib

    matplotlib.use("Agg")  # a file, never a window: the grader may run without a display
    import matplotlib.pyplot as plt

    measured = [row for row in rows if row[1] is not None]
    figure, axes = plt.subplots(figsize=(7, 4.5))
    axes.scatter([row[2] for row in measured], [row[1] for row in measured], zorder=3)
    for student, accuracy, size, *_ in measured:
        axes.annotate(student, (size, accuracy), textcoords="offset points", xytext=(4, 3), fontsize=7)
    for bar in bars:
        axes.axhline(bar, color="grey", linewidth=0.8, linestyle="--")
    axes.axvline(bound, color="firebrick", linewidth=0.8)
    axes.set_xscale("log")
    axes.set_xlabel("numbers in the model (log scale; the red line is the bound)")
    axes.set_ylabel("held-out accuracy (dashed: the bars)")
    axes.set_title(f"{ASSIGNMENT}: {len(measured)} models measured, {len(rows) - len(measured)} not")
    figure.tight_layout()
    picture = io.BytesIO()
    figure.savefig(picture, dpi=120, format="png")
    plt.close(figure)
    write_atomic(path, picture.getvalue())


def write(out: str | Path) -> list:
    """OUT/leaderboard.md and OUT/leaderboard.png from autograde's results in `out`; returns the ranked rows.

    Raises:
        GradingError: `out` holds no capstone result (not autograde's --out folder, or the capstone not graded yet).
    """
    out = Path(out)
    rows = rows_of(out)
    if not rows:
        raise GradingError(
            f"{out}: no {ASSIGNMENT} results in {out / 'results'}; pass the --out folder of an autograde run that "
            f"graded the capstone"
        )
    from tinytorch.core.capstone import HELD_OUT_BARS, MAX_PARAMETERS  # the reference package's, as the tests use

    write_atomic(out / TABLE, table(rows))
    draw(rows, out / PICTURE, HELD_OUT_BARS, MAX_PARAMETERS)
    return rows
