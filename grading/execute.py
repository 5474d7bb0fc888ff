"""How nbgrader runs a submission (inside the sandbox, grading.inside): output capped, surviving a kernel that dies."""

import json

from nbclient.exceptions import CellTimeoutError, DeadKernelError
from nbformat import NotebookNode
from nbgrader.preprocessors import Execute

OUTPUT_LIMIT = 100_000  # characters of output kept per cell; the rest is dropped as it arrives


def text_of(output):
    if output.get("output_type") == "stream":
        return output.get("text", "")
    return json.dumps(output.get("data", {})) if "data" in output else ""


class SandboxedExecute(Execute):
    """nbgrader's Execute, with two guards for code that misbehaves:

    * a cell's output is capped at OUTPUT_LIMIT characters while it runs, so printing gigabytes cannot exhaust
      the grader's memory (nbgrader's own LimitOutput trims only after the whole notebook ran);
    * when the kernel dies (os._exit, a segfault, the memory or CPU limit), the cell is marked with an error that
      says so and every later cell with "not run", so the tests that passed before it keep their points.
    """

    def preprocess(self, nb, resources=None, km=None):
        self._dead_at = None
        return super().preprocess(nb, resources, km)

    def preprocess_cell(self, cell, resources, index):
        if cell.cell_type != "code":
            return cell, resources
        if self._dead_at is not None:
            cell.outputs = [error_output("NotRun", f"not run: the kernel died in cell {self._dead_at + 1}")]
            return cell, resources
        self._output_size, self._truncated = 0, False
        try:
            return super().preprocess_cell(cell, resources, index)
        except CellTimeoutError:
            self._dead_at = index  # a kernel that ignores the interrupt cannot run anything after it
            cell.outputs = list(cell.get("outputs", [])) + [
                error_output(
                    "CellTimeout",
                    "this cell did not finish in time and ignored the interrupt: the cells after it did not run",
                )
            ]
            return cell, resources
        except DeadKernelError:
            self._dead_at = index
            cell.outputs = list(cell.get("outputs", [])) + [
                error_output(
                    "KernelDied",
                    "the kernel died while running this cell (os._exit, a crash, or the memory or CPU "
                    "limit of the grader): the cells after it did not run",
                )
            ]
            return cell, resources

    def output(self, outs, msg, display_id, cell_index):
        out = super().output(outs, msg, display_id, cell_index)
        if out is None:
            return out
        self._output_size += len(text_of(out))
        if self._output_size <= OUTPUT_LIMIT:
            return out
        if outs and outs[-1] is out:
            outs.pop()
        if not self._truncated:
            self._truncated = True
            outs.append(
                NotebookNode(
                    output_type="stream",
                    name="stdout",
                    text=f"\n... output truncated: more than {OUTPUT_LIMIT:,} characters ...\n",
                )
            )
        return None


def error_output(ename, evalue):
    return NotebookNode(output_type="error", ename=ename, evalue=evalue, traceback=[f"{ename}: {evalue}"])
