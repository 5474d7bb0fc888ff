"""The solution notebooks keep the pictures of grading/authoring/pictures.py (for a reader on the web) and no other output."""

from conftest import REPO
from grading.authoring.pictures import PICTURES, images
from grading.common.notebooks import read_notebook


def test_listed_cells_keep_a_picture_and_nothing_else_keeps_an_output():
    for path in sorted((REPO / "notebooks").glob("*.ipynb")):
        kept = PICTURES.get(path.stem, [])
        for cell in read_notebook(path).cells:
            if cell.cell_type != "code":
                continue
            if cell.get("id") in kept:
                assert cell.outputs and images(cell.outputs) == cell.outputs, (
                    f"{path.stem} {cell.id}: run python -m grading pictures"
                )
            else:
                assert not cell.get("outputs"), f"{path.stem} {cell.get('id')}: an output that is not a kept picture"


def test_only_pictures_are_kept():
    text_output = {"output_type": "stream", "name": "stdout", "text": "hello"}
    png = {
        "output_type": "execute_result",
        "data": {"image/png": "iVBOR", "text/plain": "<Figure>"},
        "execution_count": 3,
    }
    assert images([text_output, png]) == [{"output_type": "display_data", "data": png["data"], "metadata": {}}]
