"""``stepscope demo`` and ``stepscope app`` started for real, as on a fresh machine.

Each test runs the command as a subprocess with HOME a new empty directory (Streamlit never
ran there: no credentials file) and stdin /dev/null (no terminal), waits for the server's
health endpoint, and checks what was printed.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
BANNER_WORDS = ("Email", "You can now view", "streamlit skills", "usage statistics", "Uvicorn")
pytestmark = pytest.mark.slow


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _healthy(port: int) -> bool:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/_stcore/health", timeout=1) as r:
            return bool(r.status == 200)
    except OSError:
        return False


@pytest.fixture
def fresh_env(tmp_path: Path) -> dict[str, str]:
    home = tmp_path / "home"
    home.mkdir()
    env = {k: v for k, v in os.environ.items() if not k.startswith("STEPSCOPE_")}
    return {**env, "HOME": str(home), "PYTHONPATH": str(REPO)}


@pytest.fixture
def launch(tmp_path: Path, fresh_env: dict[str, str]) -> Iterator[object]:
    procs: list[subprocess.Popen[str]] = []

    def start(*args: str) -> tuple[subprocess.Popen[str], int]:
        port = _free_port()
        cmd = [sys.executable, "-m", "debugger.cli", *args, "--port", str(port)]
        proc = subprocess.Popen(
            cmd,
            cwd=tmp_path,
            env=fresh_env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        procs.append(proc)
        deadline = time.monotonic() + 60
        while not _healthy(port):
            assert proc.poll() is None, proc.communicate()
            assert time.monotonic() < deadline, "the server did not come up"
            time.sleep(0.2)
        time.sleep(1.0)  # the line with the URL follows the server's start
        return proc, port

    yield start
    for proc in procs:
        proc.kill()
        proc.wait()


def _output(proc: subprocess.Popen[str]) -> tuple[str, str]:
    proc.kill()
    out, err = proc.communicate()
    return out, err


@pytest.mark.parametrize("browser", [["--no-browser"], []], ids=["no-browser", "browser"])
def test_demo_serves_on_a_fresh_machine_without_a_terminal(
    launch: object, browser: list[str]
) -> None:
    proc, port = launch("demo", *browser)  # type: ignore[operator]
    out, err = _output(proc)
    assert f"http://127.0.0.1:{port}" in out
    for word in BANNER_WORDS:
        assert word not in out + err


def test_app_json_prints_one_document_and_keeps_serving(
    launch: object, tmp_path: Path, fresh_env: dict[str, str]
) -> None:
    built = subprocess.run(
        [sys.executable, "-m", "debugger.cli", "demo", "--no-app"],
        cwd=tmp_path,
        env=fresh_env,
        capture_output=True,
        text=True,
    )
    assert built.returncode == 0, built.stderr
    proc, port = launch("app", "--store", "stepscope-demo.duckdb", "--json")  # type: ignore[operator]
    assert proc.poll() is None and _healthy(port)
    out, err = _output(proc)
    doc = json.loads(out)
    assert doc == {
        "url": f"http://127.0.0.1:{port}",
        "port": port,
        "store": str((tmp_path / "stepscope-demo.duckdb").resolve()),
    }
    for word in BANNER_WORDS:
        assert word not in err


def test_demo_json_is_one_document_with_the_summary_and_the_url(launch: object) -> None:
    proc, port = launch("demo", "--json")  # type: ignore[operator]
    out, _ = _output(proc)
    doc = json.loads(out)
    assert doc["url"] == f"http://127.0.0.1:{port}" and doc["port"] == port
    assert doc["runs"] == 13 and doc["store"].endswith("stepscope-demo.duckdb")


@pytest.mark.parametrize("command", ["demo", "app"])
def test_a_busy_port_is_one_line_and_exit_2(
    tmp_path: Path, fresh_env: dict[str, str], command: str
) -> None:
    subprocess.run(
        [sys.executable, "-m", "debugger.cli", "demo", "--no-app"],
        cwd=tmp_path,
        env=fresh_env,
        check=True,
        capture_output=True,
    )
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        args = [command] if command == "demo" else [command, "--store", "stepscope-demo.duckdb"]
        result = subprocess.run(
            [sys.executable, "-m", "debugger.cli", *args, "--port", str(port), "--no-browser"],
            cwd=tmp_path,
            env=fresh_env,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=60,
        )
    assert result.returncode == 2
    assert result.stderr == f"error: port {port} is in use. Hint: --port N.\n"
