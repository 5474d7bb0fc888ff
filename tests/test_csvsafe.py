"""grading.common.csvsafe: a CSV cell that would start a spreadsheet formula gets a single quote in front (OWASP's advice);
plain numbers and ordinary text are left as they are."""

import csv
import io

import pytest

from grading.common.csvsafe import safe_cell, writer


@pytest.mark.parametrize(
    "text",
    [
        '=HYPERLINK("http://x","y")',
        "+1+cmd|' /C calc'!A0",
        "@SUM(1,1)",
        "-2+3",
        "\t=1+1",
        "\r=1+1",
        "\0=1+1",
        "-inf",
        "-nan",
        "-1_000",
        "- 3",
        "=",
        "-",
    ],
)
def test_a_cell_that_would_start_a_formula_gets_a_quote_in_front(text):
    assert safe_cell(text) == "'" + text


@pytest.mark.parametrize("value", ["-3", "-0.5", "+2", "-1e-3", "-.5", "3", "", "Ada Lovelace", "a=b", "x@y.edu"])
def test_numbers_and_ordinary_text_stay_as_they_are(value):
    assert safe_cell(value) == value


def test_values_are_written_as_the_csv_module_writes_them():
    assert safe_cell(None) == "" and safe_cell(-3) == "-3" and safe_cell(-0.5) == "-0.5" and safe_cell(2.0) == "2.0"
    assert safe_cell(float("-inf")) == "'-inf"


def test_the_writer_is_csv_writer_with_safe_cells():
    out = io.StringIO()
    writer(out, lineterminator="\n").writerows([["name", "score"], ["=1+1", -2], ['@A1,"quoted"', 3.5]])
    assert list(csv.reader(io.StringIO(out.getvalue()))) == [
        ["name", "score"],
        ["'=1+1", "-2"],
        ['\'@A1,"quoted"', "3.5"],
    ]


@pytest.mark.parametrize("value", ["'=", "'-Anna", "-Anna", "'x", "''", "=1+1", "-3", "Ada", "", "@", "'"])
def test_a_cell_read_back_is_the_text_that_was_written(value):
    "roster.csv is written and read again by every collect: '-Anna and -Anna must not read back as one name."
    from grading.common.csvsafe import plain_cell

    assert plain_cell(safe_cell(value)) == value


def test_an_identifier_of_the_plain_shape_is_written_as_the_lms_matches_it():
    "A Canvas login '+bob' or '@ada' with a quote in front matched nobody; one that a formula needs is refused."
    from grading.common.csvsafe import identifier_cell, safe_cell

    for login in ["+bob", "@ada", "=s1", "-x.y@example.edu", "zoë"]:
        assert safe_cell(identifier_cell(login)) == login
    for hostile in ['=HYPERLINK("http://x")', "+1+cmd|' /C calc'!A0", "@SUM(1,1)", "\tx", "'x"]:
        assert identifier_cell(hostile) is None
    assert safe_cell("+bob") == "'+bob", "a name or a note is still neutralised"
