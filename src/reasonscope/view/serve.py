"""Serving the viewer: bind a socket (127.0.0.1 and a free port unless told otherwise), then uvicorn.

The socket is bound before the server starts, so the address printed is the one served, and port 0 asks
the system for a free port. Binding to any other address than the loopback makes every run under the
folder readable by whoever can reach that address (the viewer has no login): :func:`host_warning` says
so, and the command prints it.
"""

from __future__ import annotations

import socket
import webbrowser
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from .app import LOOPBACK, make_app
from .site import Viewer

__all__ = ["bind", "host_warning", "serve"]


def host_warning(host: str) -> str | None:
    """The warning for binding to ``host``, or None for the loopback address."""
    if host in LOOPBACK:
        return None
    return (f"serving on {host}, not 127.0.0.1: anyone who can reach this address can read every run under the "
            "folder (prompts, outputs, plans); the viewer has no login. Use --host only on a network you trust.")


def bind(host: str, port: int) -> socket.socket:
    """A listening TCP socket on ``host``:``port`` (0: a free port)."""
    family = socket.AF_INET6 if ":" in host.strip("[]") else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host.strip("[]"), port))
    except OSError:
        sock.close()
        raise
    sock.listen(128)
    return sock


def address(sock: socket.socket) -> str:
    """The URL of the viewer served on ``sock``."""
    host, port = sock.getsockname()[:2]
    return f"http://[{host}]:{port}/" if ":" in host else f"http://{host}:{port}/"


def serve(root: Path, *, families: Iterable[Any], host: str = "127.0.0.1", port: int = 0,
          open_browser: bool = False, announce: Callable[[str], None] = print) -> None:
    """Serve the viewer of ``root`` until interrupted; ``announce`` gets the address (and any warning).

    ``families``: the families shown (:class:`~reasonscope.view.site.Viewer`).
    """
    import uvicorn

    viewer = Viewer(root, families=families)
    try:
        sock = bind(host, port)
        url = address(sock)
        allowed = None if host in LOOPBACK else ["*"]
        config = uvicorn.Config(make_app(viewer, allowed_hosts=allowed), log_level="warning", lifespan="off")
        warning = host_warning(host)
        if warning:
            announce(f"warning: {warning}")
        announce(f"reasonscope view: {len(viewer.runs)} runs under {viewer.root} at {url} (Ctrl-C stops)")
        if open_browser:  # every address includes the loopback one: open that
            webbrowser.open(url.replace("0.0.0.0", "127.0.0.1").replace("[::]", "[::1]"))
        uvicorn.Server(config).run(sockets=[sock])
    finally:
        viewer.close()
