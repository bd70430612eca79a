"""The HTTP client under the API providers' SDKs: replies bounded after decoding, redirects kept to one origin.

The openai and anthropic SDKs send their requests through an httpx-style ``AsyncClient`` (``httpx2`` for
current SDKs, ``httpx`` for older ones; :func:`bounded_client` builds one of the kind the SDK uses). Its
transport wraps the SDK's usual one and adds two rules.

Reply size, after decoding
--------------------------
A reply is read as its bytes arrive and decoded here, not by the HTTP client: ``identity``, ``gzip``
and ``deflate`` (``zlib.decompressobj(...).decompress(data, max_length)``, so no piece of input can
expand past :data:`CHUNK_BYTES` at once). The decoded bytes are counted as they are produced; past the
limit the reply is dropped and :class:`ReplyTooLarge` names the request (method and URL), the limit and
the bytes read on the wire. A reply of a few KB on the wire that decodes to gigabytes therefore costs at
most the limit in memory. The limit is the model's ``options.max_reply_bytes`` (default
:data:`DEFAULT_MAX_REPLY_BYTES`, 64 MiB: a reply of 1,000,000 tokens with 20 log-probabilities per
token is far below it). Requests ask for ``Accept-Encoding: gzip, deflate``; a reply in another
encoding (``br``, ``zstd``, unknown) is refused the same way, since it could not be bounded as it is
decoded.

:class:`ReplyTooLarge` is a :class:`~reasonscope.models.base.MalformedReply`: a transient error of that
request, retried, and pending when the retries run out (not stored, asked again by the next run); never
a failed generation, never the model's answer.

Redirects
---------
A redirect (301, 302, 303, 307, 308 with a ``Location``) to the same origin (scheme, host and port) is
followed, as the SDKs follow redirects. One to another origin is refused before anything is sent there:
:class:`CrossOriginRedirect` names both origins and leaves the request pending at once, not retried (the
endpoint is misconfigured or compromised: only the user can tell), so the other origin's reply can never
be stored as the model's answer, and the API key is never sent to it.
"""

from __future__ import annotations

import functools
import importlib
import zlib
from collections.abc import AsyncIterator, Iterator
from typing import Any

from .base import MalformedReply
from .errors import LeftPending

DEFAULT_MAX_REPLY_BYTES = 64 * 1024**2
"""Largest reply body, once decoded (``options.max_reply_bytes`` overrides it per model)."""
CHUNK_BYTES = 1 << 16
"""Most bytes one decoding step produces."""
REDIRECTS = (301, 302, 303, 307, 308)
ACCEPTED_ENCODINGS = "gzip, deflate"


class ReplyTooLarge(MalformedReply):
    """A reply whose decoded body passes the limit, or is in an encoding that cannot be bounded. Transient."""


class CrossOriginRedirect(LeftPending):
    """The server redirected the request to another origin: refused, the request stays pending."""


def max_reply_bytes(options: dict[str, Any]) -> int:
    """The reply limit of a model: ``options.max_reply_bytes`` (a whole number >= 1024), else the default."""
    value = options.get("max_reply_bytes", DEFAULT_MAX_REPLY_BYTES)
    if isinstance(value, bool) or not isinstance(value, int) or value < 1024:
        raise ValueError(f"options.max_reply_bytes: expected a whole number of bytes >= 1024, got {value!r}")
    return value


def origin(url: Any) -> tuple[str, str, int | None]:
    """(scheme, host, port) of an httpx URL, with the scheme's default port filled in."""
    port = url.port or {"http": 80, "https": 443}.get(url.scheme)
    return url.scheme, url.host, port


def _show(o: tuple[str, str, int | None]) -> str:
    return f"{o[0]}://{o[1]}:{o[2]}"


class _Decoder:
    """One ``Content-Encoding`` layer, decoded a bounded piece at a time."""

    def __init__(self, encoding: str):
        self.encoding = encoding
        # gzip: a gzip header; deflate: zlib-wrapped (raw deflate is tried when that fails on the first bytes)
        self.inner = zlib.decompressobj(zlib.MAX_WBITS | 16 if encoding == "gzip" else zlib.MAX_WBITS)
        self.started = False

    def feed(self, data: bytes) -> Iterator[bytes]:
        while data:
            try:
                out = self.inner.decompress(data, CHUNK_BYTES)
            except zlib.error as err:
                if self.encoding == "deflate" and not self.started:
                    self.inner, self.started = zlib.decompressobj(-zlib.MAX_WBITS), True
                    continue
                raise MalformedReply(f"malformed response: the {self.encoding} body cannot be decoded ({err})") from None
            self.started = True
            data = self.inner.unconsumed_tail
            if out:
                yield out
            if self.inner.eof:
                return

    def flush(self) -> Iterator[bytes]:
        while not self.inner.eof and (out := self.inner.decompress(b"", CHUNK_BYTES)):
            yield out


def _decoders(header: str, where: str, limit: int) -> list[_Decoder]:
    layers = [e.strip().lower() for e in header.split(",") if e.strip() and e.strip().lower() != "identity"]
    unknown = [e for e in layers if e not in ("gzip", "x-gzip", "deflate")]
    if unknown:
        raise ReplyTooLarge(f"the reply to {where} is in Content-Encoding {', '.join(unknown)}, which cannot be "
                            f"read within max_reply_bytes ({limit:,} bytes); only {ACCEPTED_ENCODINGS} is asked for")
    return [_Decoder("gzip" if e == "x-gzip" else e) for e in reversed(layers)]  # the last applied comes off first


@functools.cache
def _transport_class(module_name: str) -> type:
    """The bounding transport, built on ``module_name`` (``httpx2`` or ``httpx``) once."""
    http = importlib.import_module(module_name)

    class BoundedStream(http.AsyncByteStream):
        def __init__(self, raw: Any, decoders: list[_Decoder], limit: int, where: str, encoding: str):
            self.raw, self.decoders, self.limit, self.where, self.encoding = raw, decoders, limit, where, encoding

        async def __aiter__(self) -> AsyncIterator[bytes]:
            wire = decoded = 0

            def layers(data: bytes, final: bool) -> Iterator[bytes]:
                pieces: Iterator[bytes] = iter((data,)) if data else iter(())
                for d in self.decoders:
                    pieces = _through(d, pieces, final)
                return pieces

            async for raw in self.raw:
                wire += len(raw)
                for piece in layers(raw, False):
                    decoded += len(piece)
                    self._check(decoded, wire)
                    yield piece
            for piece in layers(b"", True):
                decoded += len(piece)
                self._check(decoded, wire)
                yield piece

        def _check(self, decoded: int, wire: int) -> None:
            if decoded > self.limit:
                how = f" once decoded (Content-Encoding {self.encoding}, {wire:,} bytes read on the wire)" \
                    if self.encoding else ""
                raise ReplyTooLarge(f"the reply to {self.where} is larger than max_reply_bytes ({self.limit:,} bytes)"
                                    f"{how}; it was dropped (raise options.max_reply_bytes if such replies are real)")

        async def aclose(self) -> None:
            await self.raw.aclose()

    class BoundedTransport(http.AsyncBaseTransport):
        """The SDK's transport with replies bounded after decoding and redirects kept to one origin."""

        def __init__(self, inner: Any, limit: int):
            self.inner, self.limit = inner, limit

        async def handle_async_request(self, request: Any) -> Any:
            request.headers["Accept-Encoding"] = ACCEPTED_ENCODINGS
            response = await self.inner.handle_async_request(request)
            where = f"{request.method} {request.url.copy_with(query=None)}"
            location = response.headers.get("location")
            if response.status_code in REDIRECTS and location:
                try:
                    target = request.url.join(location)
                except Exception:  # a Location httpx cannot read: let the client report it
                    target = request.url
                if origin(target) != origin(request.url):
                    await response.aclose()
                    raise CrossOriginRedirect(
                        f"the server redirected {where} to another origin ({_show(origin(target))}, from "
                        f"{_show(origin(request.url))}, HTTP {response.status_code}); reasonscope follows redirects "
                        "within one origin only, so nothing was sent there and its reply is not stored. Check "
                        "base_url (set it to the final address if the move is intended)")
            encoding = response.headers.get("content-encoding", "")
            try:
                decoders = _decoders(encoding, where, self.limit)
            except ReplyTooLarge:
                await response.aclose()
                raise
            headers = [(k, v) for k, v in response.headers.raw
                       if k.lower() not in (b"content-encoding", b"content-length")] if decoders else response.headers.raw
            return http.Response(response.status_code, headers=headers,
                                 stream=BoundedStream(response.stream, decoders, self.limit, where, encoding.strip()),
                                 extensions=response.extensions)

        async def aclose(self) -> None:
            await self.inner.aclose()

    return BoundedTransport


def _through(decoder: _Decoder, pieces: Iterator[bytes], final: bool) -> Iterator[bytes]:
    for piece in pieces:
        yield from decoder.feed(piece)
    if final:
        yield from decoder.flush()


def _http_module(sdk: Any) -> str:
    """The httpx-style package the SDK's client is built on (``httpx2`` or ``httpx``)."""
    for cls in sdk.DefaultAsyncHttpxClient.__mro__:
        top = cls.__module__.split(".")[0]
        if cls.__name__ == "AsyncClient" and top.startswith("httpx"):
            return top
    return "httpx"


def bounded_client(sdk: Any, options: dict[str, Any]) -> Any:
    """An ``AsyncClient`` for the ``sdk`` module (``openai`` or ``anthropic``), with the SDK's defaults.

    Its transport bounds replies after decoding and refuses cross-origin redirects (module docstring).
    """
    name = _http_module(sdk)
    http = importlib.import_module(name)
    limits = http.Limits(max_connections=1000, max_keepalive_connections=100)  # the SDKs' own defaults
    transport = _transport_class(name)(http.AsyncHTTPTransport(limits=limits), max_reply_bytes(options))
    return sdk.DefaultAsyncHttpxClient(transport=transport)
