"""Feedback shows the student what failed, never the hidden tests' code."""

import re

from nbconvert.preprocessors import Preprocessor

from .notebooks import HIDDEN_BEGIN, HIDDEN_END

HIDDEN_REGION = re.compile(re.escape(HIDDEN_BEGIN) + r".*?" + re.escape(HIDDEN_END), re.DOTALL)
PLACEHOLDER = "# (hidden tests: their result is shown below)"


class HideHiddenTests(Preprocessor):
    "Replace hidden test code by a placeholder, and each traceback by its last line (which holds the message)."

    def preprocess_cell(self, cell, resources, index):
        if cell.cell_type == "code" and cell.get("metadata", {}).get("nbgrader", {}).get("grade"):
            cell.source = HIDDEN_REGION.sub(PLACEHOLDER, cell.source)
            for output in cell.get("outputs", []):
                if output.get("output_type") == "error":
                    output["traceback"] = [f"{output.get('ename', 'Error')}: {output.get('evalue', '')}"]
        return cell, resources
