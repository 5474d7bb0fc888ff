"""JupyterLab as a student sees it: the kit served headless, a solved notebook opened in Chromium, Run All, and the
visible tests' output on the page. Saves a screenshot (tests/artifacts/jupyterlab-01_tensor.png)."""

import json
import os
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

from conftest import REPO, run_cli
from grading.common.answers import solved
from grading.common.notebooks import read_notebook, write_notebook
from grading.grade.clock import Budget

CHROMIUM = Path("/usr/bin/chromium")
SCREENSHOT = REPO / "tests" / "artifacts" / "jupyterlab-01_tensor.png"
VISIBLE_OUTPUTS = ["elementwise operations work", "matrix products work", "reductions work"]

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(
        not CHROMIUM.exists(),
        reason="Debian's chromium is not installed (.ci/run installs it: apt-get install chromium)",
    ),
    pytest.mark.skipif(
        shutil.which("jupyter") is None and not (Path(sys.executable).parent / "jupyter").exists(),
        reason="JupyterLab is not installed",
    ),
]


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def student_kit(kit, tmp_path_factory):
    "A copy of the kit in which the student solved notebook 01 and exported it."
    mine = tmp_path_factory.mktemp("student") / "kit"
    shutil.copytree(kit, mine)
    path = mine / "01_tensor" / "01_tensor.ipynb"
    write_notebook(solved(read_notebook(path), read_notebook(REPO / "notebooks" / "01_tensor.ipynb")), path)
    result = run_cli("export", cwd=mine)
    assert result.returncode == 0, result.stderr
    return mine


@pytest.fixture(scope="module")
def jupyterlab(student_kit, tmp_path_factory):
    "JupyterLab serving the kit on localhost; its kernels import the kit's own tinytorch (as after pip install -e .)."
    home = tmp_path_factory.mktemp("jupyter")
    settings = home / "settings" / "@jupyterlab" / "apputils-extension"
    settings.mkdir(parents=True)
    (settings / "notification.jupyterlab-settings").write_text(json.dumps({"fetchNews": "false"}))
    # Every cell in the page, not only those on screen (JupyterLab 4 renders a long notebook lazily by default).
    notebook = home / "settings" / "@jupyterlab" / "notebook-extension"
    notebook.mkdir(parents=True)
    # The preferred kernel started without asking: on a loaded machine JupyterLab can otherwise offer "Select Kernel".
    tracker = {"windowingMode": "none", "autoStartDefaultKernel": True}
    (notebook / "tracker.jupyterlab-settings").write_text(json.dumps(tracker))
    port, token = free_port(), "tinytorch-test"
    env = dict(
        os.environ,
        PYTHONPATH=str(student_kit),
        JUPYTER_CONFIG_DIR=str(home / "config"),
        JUPYTER_RUNTIME_DIR=str(home / "runtime"),
        JUPYTER_DATA_DIR=str(home / "data"),
    )
    env.pop("TINYTORCH_QUIET", None)
    log = open(home / "server.log", "w")
    server = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "jupyter",
            "lab",
            "--no-browser",
            "--allow-root",
            "--ip=127.0.0.1",
            f"--port={port}",
            f"--IdentityProvider.token={token}",
            f"--ServerApp.root_dir={student_kit}",
            f"--LabApp.user_settings_dir={home / 'settings'}",
        ],
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    url = f"http://127.0.0.1:{port}"
    try:
        start = Budget(90)  # stretched while the machine is busy
        while True:
            try:
                urllib.request.urlopen(f"{url}/api/status?token={token}", timeout=2)
                break
            except OSError:
                if server.poll() is not None or start.expired():
                    raise RuntimeError(
                        "JupyterLab did not start:\n" + (home / "server.log").read_text()[-2000:]
                    ) from None
                time.sleep(0.5)
        yield url, token, home / "server.log"
    finally:
        server.terminate()
        try:
            server.wait(15)
        except subprocess.TimeoutExpired:
            server.kill()
        log.close()


def wait_for(page, selector, seconds, timeout_error):
    "Wait for `selector` up to `seconds` of a quiet machine's time: longer while the machine is busy (grading.grade.clock)."
    budget = Budget(seconds)
    while True:
        try:
            return page.wait_for_selector(selector, timeout=5_000)
        except timeout_error:
            if budget.expired():
                raise


def run_all_cells(page, timeout_error):
    """Run > Run All Cells, and once more if no cell started within 30 s of a quiet machine's time: on a loaded
    machine the click can land while the menu is still being drawn, and then nothing runs."""
    started = ".jp-InputArea-prompt:has-text('[*]'), .jp-InputArea-prompt:has-text('[1]')"
    for _ in range(2):
        page.click("div.lm-MenuBar-itemLabel:text-is('Run')")
        page.click("div.lm-Menu-itemLabel:text-is('Run All Cells')")
        try:
            return wait_for(page, started, 30, timeout_error)
        except timeout_error:
            page.keyboard.press("Escape")  # close a menu left open
    raise AssertionError(f"Run All Cells started no cell, twice:\n{what_the_page_shows(page)}")


KERNEL_DIALOG = ".jp-Dialog:has-text('Select Kernel')"


def run_all_until(page, selector, timeout_error):
    """Run All Cells until `selector` shows. Once more if the notebook went idle with cells left unrun, or a "Select
    Kernel" dialog showed (accepted first): a kernel that died or restarted under a loaded machine (CI saw it twice:
    cell 1 ran, the rest were cleared) clears the queue; a student would press Run All again. A notebook that fails
    twice fails the test."""
    idle = ".jp-Notebook-ExecutionIndicator[data-status='idle']"
    for attempt in range(2):
        if accept_kernel_dialog(page):
            wait_for(page, idle, 90, timeout_error)
        run_all_cells(page, timeout_error)
        try:
            return wait_for(page, selector, 120, timeout_error)
        except timeout_error:
            dialog = page.locator(KERNEL_DIALOG).count()
            unrun = page.locator(".jp-CodeCell .jp-InputArea-prompt:text-is('[ ]:')").count()
            if attempt == 1 or not (dialog or (page.locator(idle).count() and unrun)):
                raise


def accept_kernel_dialog(page):
    """Accept a "Select Kernel" dialog (its default is the notebook's Python 3), as a student would. CI saw one once
    after the first cell had run under a loaded machine; it blocks every click on the notebook."""
    dialog = page.locator(KERNEL_DIALOG)
    if not dialog.count():
        return False
    dialog.locator(".jp-mod-accept").first.click()
    return True


def what_the_page_shows(page):
    "For a failure's message: a screenshot's path, any dialog's text, the prompts and the outputs so far."
    SCREENSHOT.parent.mkdir(exist_ok=True)
    failure = SCREENSHOT.with_name("jupyterlab-failure.png")
    page.screenshot(path=str(failure))
    dialogs = page.locator(".jp-Dialog").all_inner_texts()
    prompts = page.locator(".jp-InputArea-prompt").all_inner_texts()
    outputs = page.locator(".jp-OutputArea-output").all_inner_texts()
    return f"screenshot: {failure}\ndialogs: {dialogs}\nprompts: {prompts}\noutputs: {outputs}"[:4000]


def test_notebook_runs_in_jupyterlab_and_shows_passing_visible_tests(jupyterlab):
    playwright = pytest.importorskip(
        "playwright.sync_api", reason="playwright is not installed (pip install -e '.[dev]')"
    )
    url, token, server_log = jupyterlab
    with playwright.sync_playwright() as p:
        browser = p.chromium.launch(
            executable_path=str(CHROMIUM),
            args=[
                "--no-sandbox",
                "--disable-gpu",
                "--disable-quic",
                "--no-first-run",
                "--disable-background-networking",
                "--disable-component-update",
                "--disable-sync",
            ],
        )
        try:
            page = browser.new_page(viewport={"width": 1400, "height": 1000})
            page.goto(f"{url}/lab/tree/01_tensor/01_tensor.ipynb?token={token}")
            idle = ".jp-Notebook-ExecutionIndicator[data-status='idle']"
            wait_for(page, ".jp-NotebookPanel", 90, playwright.TimeoutError)
            wait_for(page, idle, 90, playwright.TimeoutError)
            # In a cell's output, not its source: the test cell's own code holds the same words.
            last_output = f".jp-OutputArea-output:has-text('{VISIBLE_OUTPUTS[-1]}')"
            try:
                run_all_until(page, last_output, playwright.TimeoutError)
            except playwright.TimeoutError:
                log = server_log.read_text()[-3000:]
                pytest.fail(
                    f"Run All did not reach the last visible test:\n{what_the_page_shows(page)}\nserver log:\n{log}"
                )
            wait_for(page, idle, 120, playwright.TimeoutError)
            outputs = page.locator(".jp-OutputArea-output").all_inner_texts()
            errors = page.locator(".jp-OutputArea-output[data-mime-type='application/vnd.jupyter.stderr']").count()
            SCREENSHOT.parent.mkdir(exist_ok=True)
            page.screenshot(path=str(SCREENSHOT))
        finally:
            browser.close()
    text = "\n".join(outputs)
    for expected in VISIBLE_OUTPUTS:
        assert expected in text, f"{expected!r} missing from the notebook's output:\n{text}"
    assert "Error" not in text and errors == 0, f"a cell failed in JupyterLab:\n{text}"
    assert SCREENSHOT.stat().st_size > 10_000
