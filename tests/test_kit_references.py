"""Issue 41, point 3: a student can test a notebook before the earlier ones are perfect. A test that fails in an
earlier notebook's stub says which exercise it went through and what to do; `release --reference NB` hands out the
reference modules of notebooks whose deadline has passed, which the kit's export keeps unless `--mine`; and the release
scan still refuses a kit that shows anything of a notebook still open, the handed-out references included."""

import json

import pytest
from release_helpers import course_copy, release_in
from test_release_scan import ANSWER, tiny_notebook

from conftest import run_cli
from grading.authoring.leaks import course_secrets, find_leaks
from grading.authoring.release import check_references, stub_message
from grading.common.errors import GradingError
from grading.common.notebooks import SOLUTION_BEGIN, SOLUTION_END, course_notebooks
from grading.student.check import unfinished_earlier, went_through


def raised_by(stub_line):
    "What a failed test reports for a stub line of the kit: 'NotImplementedError: ...'."
    try:
        exec(stub_line.strip())
    except NotImplementedError as error:
        return f"{type(error).__name__}: {error}"
    raise AssertionError("the stub raised nothing")


def test_a_stub_says_what_a_later_notebooks_test_that_went_through_it_should_do():
    message = raised_by(stub_message("02_function", "Function"))
    assert message.startswith("NotImplementedError: Exercise Function in 02_function.ipynb is not done yet")
    assert "Its test went through Function of 02_function.ipynb" in message
    assert "ask your instructor for the reference module of 02_function" in message


def test_check_says_which_earlier_exercise_a_failed_test_went_through_and_says_what_to_do_once():
    earlier = raised_by(stub_message("02_function", "Function"))
    own = raised_by(stub_message("04_elementwise", "AddBackward"))
    assert went_through(earlier, "04_elementwise") == (
        "this test went through Function of 02_function.ipynb, which is not done yet"
    )
    assert went_through(own, "04_elementwise") == (
        "NotImplementedError: Exercise AddBackward in 04_elementwise.ipynb is not done yet: write your code here, "
        "then run: python -m grading export, and restart the kernel of an open notebook (it keeps the modules it "
        "imported)."
    )
    assert went_through("AssertionError: wrong gradient", "04_elementwise") == "AssertionError: wrong gradient"
    results = [
        (name, 1, False, went_through(message, "04_elementwise"))
        for name, message in [("add", earlier), ("sub", earlier), ("mul", own)]
    ]
    (advice,) = unfinished_earlier(results, "04_elementwise")
    assert advice.startswith("Function of 02_function.ipynb is not done yet: finish it there and run python -m")
    assert "reference module of 02_function" in advice


def test_a_reference_for_a_notebook_the_course_lacks_is_refused_and_the_rest_come_in_course_order():
    notebooks = course_notebooks()
    assert check_references(["02_function", "01_tensor"], notebooks) == ["01_tensor", "02_function"]
    with pytest.raises(GradingError, match=r"^--reference 07_activatoins: the course has no such notebook; give one"):
        check_references(["06_autograd", "07_activatoins"], notebooks)


def test_a_handed_out_notebooks_answers_are_no_secret_but_an_open_ones_still_are(tmp_path):
    exercise = {"grade_id": "solution-SquareBackward", "solution": True, "grade": False}
    square = "class SquareBackward:\n    def apply(self, grad_output):\n        (x,) = self.saved_tensors\n"
    solved = f"{square}        {SOLUTION_BEGIN}\n        {ANSWER}\n        {SOLUTION_END}"
    open_answer = "return (grad_output * np.cos(x.data),)"
    sine = {"grade_id": "solution-SinBackward", "solution": True, "grade": False}
    notebooks = {
        "02_a": tiny_notebook(tmp_path / "source" / "02_a.ipynb", (solved, exercise)),
        "03_b": tiny_notebook(
            tmp_path / "source" / "03_b.ipynb",
            (
                f"class SinBackward:\n    def apply(self, grad_output):\n        {SOLUTION_BEGIN}\n        {open_answer}\n"
                f"        {SOLUTION_END}",
                sine,
            ),
        ),
    }
    assert {s.stem for s in course_secrets(notebooks).values()} == {"02_a", "03_b"}
    assert {s.stem for s in course_secrets(notebooks, handed_out=["02_a"]).values()} == {"03_b"}
    kit = tmp_path / "kit" / "references" / "tinytorch" / "core"
    kit.mkdir(parents=True)
    (kit / "function.py").write_text(f"def square_backward(grad_output, x):\n    {ANSWER}\n")
    assert list(find_leaks(tmp_path / "kit", notebooks, handed_out=["02_a"])) == []
    (kit / "function.py").write_text(f"def sin_backward(grad_output, x):\n    {open_answer}\n")
    leaks = [secret.stem for *_, secret in find_leaks(tmp_path / "kit", notebooks, handed_out=["02_a"])]
    assert leaks == ["03_b"]


def plant_in_solution(path, line):
    "Put `line` (never run) in the first exported solution region of a notebook: the reference module will show it."
    nb = json.loads(path.read_text())
    for cell in nb["cells"]:
        source = "".join(cell["source"])
        if cell["cell_type"] == "code" and source.startswith("#| export") and SOLUTION_BEGIN in source:
            marker = next(text for text in source.splitlines() if text.strip() == SOLUTION_BEGIN)
            indent = marker[: len(marker) - len(marker.lstrip())]
            cell["source"] = source.replace(marker, f"{marker}\n{indent}if False:\n{indent}    {line}", 1)
            path.write_text(json.dumps(nb, indent=1, ensure_ascii=False) + "\n")
            return
    raise AssertionError(f"{path.name} has no exported solution region")


@pytest.mark.slow
def test_a_reference_module_handed_out_is_what_the_kits_export_keeps_unless_mine(tmp_path):
    root = course_copy(tmp_path, ["01_tensor", "02_function", "03_gradcheck"])
    kit = tmp_path / "kit"
    result = release_in(root, kit, "--reference", "02_function", "--reference", "01_tensor")
    assert result.returncode == 0, result.stderr
    assert "reference modules handed out" in result.stdout and "01_tensor, 02_function" in result.stdout
    notebooks = course_notebooks(root / "notebooks")
    references = kit / "references" / "tinytorch" / "core"
    assert sorted(p.name for p in references.iterdir()) == ["function.py", "tensor.py"]
    for name in ("function.py", "tensor.py"):
        reference = (references / name).read_text()
        assert "is not done yet" not in reference and SOLUTION_BEGIN not in reference, name
        assert (kit / "tinytorch" / "core" / name).read_text() == reference, name
    assert "Exercise numerical_grad in 03_gradcheck.ipynb" in (kit / "tinytorch" / "core" / "gradcheck.py").read_text()
    assert {s.stem for *_, s in find_leaks(kit, notebooks)} == {"01_tensor", "02_function"}, "the scan sees them"
    assert list(find_leaks(kit, notebooks, handed_out=["01_tensor", "02_function"])) == []

    module = kit / "tinytorch" / "core" / "function.py"
    assert run_cli("export", cwd=kit).returncode == 0
    assert module.read_text() == (references / "function.py").read_text()
    assert run_cli("export", "--mine", cwd=kit).returncode == 0
    assert "Exercise Function in 02_function.ipynb is not done yet" in module.read_text()
    assert run_cli("export", cwd=kit).returncode == 0
    assert module.read_text() == (references / "function.py").read_text()


@pytest.mark.slow
def test_a_handed_out_reference_that_shows_an_open_notebooks_answer_stops_the_release(tmp_path):
    root = course_copy(tmp_path, ["02_function", "03_gradcheck"])
    notebooks = course_notebooks(root / "notebooks")
    secrets = course_secrets({"03_gradcheck": notebooks["03_gradcheck"]}).values()
    secret = next(s for s in secrets if s.kind == "solution" and "(plus - minus)" in s.line)  # numerical_grad's
    plant_in_solution(notebooks["02_function"], secret.line.strip())
    out = tmp_path / "kit"
    result = release_in(root, out, "--reference", "02_function")
    error = result.stderr.strip().splitlines()[-1]
    assert result.returncode != 0, result.stdout
    assert (
        error.startswith("error: references/tinytorch/core/function.py, line ") and "the kit was not released" in error
    )
    assert f"the answer to exercise {secret.exercise} of 03_gradcheck" in error, error
    assert not out.exists(), "nothing is released"


def test_check_prints_each_failed_test_short_and_what_to_do_once(tmp_path, monkeypatch, capsys):
    from grading import cli
    from grading.student import check

    earlier = went_through(raised_by(stub_message("02_function", "Function")), "04_elementwise")
    results = [("add_backward", 1, False, earlier), ("sub_backward", 1, False, earlier), ("mul_backward", 1, True, "")]
    monkeypatch.setattr(check, "run_tests", lambda notebook: (results, []))
    notebook = tiny_notebook(tmp_path / "04_elementwise" / "04_elementwise.ipynb")
    assert cli.main(["check", str(notebook)]) == 1
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == f"FAIL    add_backward (1 point): {earlier}"
    assert [line for line in lines if line.startswith("NOTE")] == [
        "NOTE    " + unfinished_earlier(results, "04_elementwise")[0]
    ]
    assert lines[-1] == "1 passed, 2 failed"


def test_a_stub_followed_by_given_code_says_that_code_is_given_and_runs_after_the_students():
    "A student read `return result` after the stub's raise as dead code: the kit says it is given and runs after theirs."
    from grading.authoring.release import GIVEN_AFTER_STUB, explain_stubs

    source = (
        "def attach(result, function_cls, *inputs):\n"
        "    # YOUR CODE HERE\n"
        "    raise NotImplementedError()\n"
        "    return result\n"
        "\n\n"
        "class MulBackward(Function):\n"
        "    def apply(self, grad_output):\n"
        "        if self.needs_grad(0):\n"
        "            # YOUR CODE HERE\n"
        "            raise NotImplementedError()\n"
        "        return grad_a, grad_b\n"
        "\n\n"
        "def last():\n"
        "    # YOUR CODE HERE\n"
        "    raise NotImplementedError()"
    )
    lines = explain_stubs(source, "02_function").splitlines()
    assert lines[3] == "    " + GIVEN_AFTER_STUB and lines[4] == "    return result"
    assert GIVEN_AFTER_STUB not in "\n".join(lines[5:])  # under an if, or at the end: nothing follows at its level
    assert "Exercise attach in 02_function.ipynb is not done yet" in lines[2]
    assert "Exercise MulBackward in 02_function.ipynb" in lines[11]
