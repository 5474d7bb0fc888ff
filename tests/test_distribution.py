"""distribution.png: whole students on the y axis, final scores, and no 0 % for a submission that has no score."""

import matplotlib

matplotlib.use("Agg")

from grading.grade.gradebook import Row, plot_distribution, student_percentages  # noqa: E402
from grading.reports import marking  # noqa: E402


def test_a_missing_or_ungraded_submission_is_left_out_not_counted_as_zero():
    rows = [
        Row("ada", "04_elementwise", "04_elementwise.ipynb", score=24, max_score=24),
        Row("ada", "05_matmul", "05_matmul.ipynb", note="no notebook in the folder", problem=True),
        Row("bo", "04_elementwise", "04_elementwise.ipynb", score=12, max_score=24),
        Row("bo", "05_matmul", "05_matmul.ipynb", max_score=19, note="not graded: the sandbox died", graded=False),
        Row("cy", "04_elementwise", "04_elementwise.ipynb", note="unreadable notebook", problem=True),
    ]
    assert student_percentages(rows) == {"ada": 100.0, "bo": 50.0}


def test_the_percentage_is_of_the_final_score_with_marks_and_late_penalty():
    marks = marking.Marks(score=2.0, points=6.0)
    late = Row(
        "ada", "04_elementwise", "04.ipynb", score=20, max_score=24, manual_points=6, marks=marks, penalty_fraction=0.5
    )
    unmarked_course = Row("bo", "04_elementwise", "04.ipynb", score=12, max_score=24, manual_points=6)
    assert student_percentages([late, unmarked_course]) == {"ada": 100 * (22 - 11) / 30, "bo": 50.0}


def test_written_answers_count_once_all_of_a_notebooks_are_marked():
    "An instructor's alice, 224 of 224 autograded, sat in the 70-80 % bin: her unmarked answers' points counted."
    waiting = marking.none_yet({"why_a": 3.0, "why_b": 3.0})
    half = marking.Marks(score=3.0, points=6.0, unmarked=["why_b"])
    rows = [
        Row("ada", "04", "04.ipynb", score=24, max_score=24, manual_points=6, marks=waiting),
        Row("bo", "04", "04.ipynb", score=12, max_score=24, manual_points=6, marks=half),
        Row("cy", "04", "04.ipynb", score=12, max_score=24, manual_points=6, marks=marking.Marks(score=6, points=6)),
    ]
    assert student_percentages(rows) == {"ada": 100.0, "bo": 50.0, "cy": 60.0}


def test_the_y_axis_counts_whole_students(tmp_path, monkeypatch):
    import matplotlib.pyplot as plt

    seen = {}
    close = plt.close

    def keep_ticks(figure):
        seen["ticks"] = [t for t in figure.axes[0].get_yticks() if t >= 0]
        close(figure)

    monkeypatch.setattr(plt, "close", keep_ticks)
    rows = [Row(s, "04", "04.ipynb", score=n, max_score=24) for s, n in [("ada", 24), ("bo", 3)]]
    plot_distribution(rows, tmp_path / "distribution.png")
    assert (tmp_path / "distribution.png").stat().st_size > 0
    assert seen["ticks"] and all(float(t).is_integer() for t in seen["ticks"]), seen["ticks"]
