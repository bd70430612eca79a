"""Test and benchmark helpers shipped with the package.

* Tiny models built locally (a config plus a tokenizer trained here, saved with ``save_pretrained``):
  they load through the real ``from_pretrained`` path with no download. Their weights are random:
  they exercise code paths and costs, not quality.
* :func:`scripted_chains`: scripted answer-first chains for the attack family's tests.
* :class:`FakeOpenAIServer`: an OpenAI-compatible chat-completions server on 127.0.0.1 that injects
  faults (429 with or without Retry-After, 500, dropped connections, timeouts, malformed JSON) in a
  given pattern, answers refusals or null content on request, with a fixed latency and an optional
  token rate; :class:`FakeAnthropicServer` speaks Anthropic's Messages API.
"""

from __future__ import annotations

import json
import socket
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

CORPUS = [
    "Ana has 3 apples and gets 5 more . How many apples does Ana have ?",
    "Step one : 3 + 5 = 8 . Answer : 8",
    "The sky is blue . The sky is not blue . All birds are animals .",
    "A robin is a bird . Is a robin an animal ? Yes . No .",
    "entailment neutral contradiction premise hypothesis relation statement first second",
] * 4


def build_tiny_causal_lm(folder: str | Path, hidden: int = 32, layers: int = 2, tied: bool = False) -> Path:
    """A small Llama with a byte-level BPE tokenizer trained on :data:`CORPUS`.

    ``tied``: the output layer shares the input embeddings, as in SmolLM2.
    """
    import torch
    from tokenizers import ByteLevelBPETokenizer
    from transformers import LlamaConfig, LlamaForCausalLM, PreTrainedTokenizerFast

    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    bpe = ByteLevelBPETokenizer()
    bpe.train_from_iterator(CORPUS, vocab_size=300, min_frequency=1, special_tokens=["<s>", "</s>", "<pad>"])
    tok = PreTrainedTokenizerFast(tokenizer_object=bpe._tokenizer, bos_token="<s>", eos_token="</s>",
                                  pad_token="<pad>")
    tok.save_pretrained(folder)
    torch.manual_seed(0)
    cfg = LlamaConfig(vocab_size=len(tok), hidden_size=hidden, intermediate_size=2 * hidden, num_hidden_layers=layers,
                      num_attention_heads=4, num_key_value_heads=4, max_position_embeddings=512,
                      bos_token_id=tok.bos_token_id, eos_token_id=tok.eos_token_id, pad_token_id=tok.pad_token_id,
                      tie_word_embeddings=tied)
    LlamaForCausalLM(cfg).save_pretrained(folder)
    return folder


def build_tiny_seq2seq(folder: str | Path, d_model: int = 32, layers: int = 2) -> Path:
    """A small T5 with a word-level tokenizer trained on :data:`CORPUS` plus the information tests' words.

    Inputs and labels end with ``</s>``.
    """
    import torch
    from tokenizers import Tokenizer, models, pre_tokenizers, processors, trainers
    from transformers import PreTrainedTokenizerFast, T5Config, T5ForConditionalGeneration

    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    wl = Tokenizer(models.WordLevel(unk_token="<unk>"))
    wl.pre_tokenizer = pre_tokenizers.Whitespace()
    extra = ["rationale : baseline : The answer is yes no implies contradicts not related to Is it true that "
             "because so [MASK] <mask> true false entailment neutral contradiction 0 1 2 3 4 5 6 7 8 9 10 11 12"]
    wl.train_from_iterator(CORPUS + extra, trainers.WordLevelTrainer(special_tokens=["<pad>", "</s>", "<unk>",
                                                                                   "<mask>"]))
    wl.post_processor = processors.TemplateProcessing(single="$A </s>", special_tokens=[("</s>", 1)])
    tok = PreTrainedTokenizerFast(tokenizer_object=wl, pad_token="<pad>", eos_token="</s>", unk_token="<unk>",
                                  mask_token="<mask>")
    tok.save_pretrained(folder)
    torch.manual_seed(0)
    cfg = T5Config(vocab_size=len(tok), d_model=d_model, d_ff=2 * d_model, d_kv=8, num_layers=layers,
                   num_decoder_layers=layers, num_heads=4, pad_token_id=0, eos_token_id=1, decoder_start_token_id=0)
    T5ForConditionalGeneration(cfg).save_pretrained(folder)
    return folder


def build_tiny_nli(folder: str | Path, hidden: int = 32, layers: int = 2) -> Path:
    """A small BERT cross-encoder with ENTAILMENT / NEUTRAL / CONTRADICTION labels."""
    import torch
    from tokenizers import BertWordPieceTokenizer
    from transformers import BertConfig, BertForSequenceClassification, BertTokenizerFast

    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    wp = BertWordPieceTokenizer(lowercase=True)
    wp.train_from_iterator(CORPUS, vocab_size=200, min_frequency=1)
    wp.save_model(str(folder))
    tok = BertTokenizerFast(vocab_file=str(folder / "vocab.txt"))
    tok.save_pretrained(folder)
    torch.manual_seed(0)
    cfg = BertConfig(vocab_size=len(tok), hidden_size=hidden, intermediate_size=2 * hidden, num_hidden_layers=layers,
                     num_attention_heads=4, num_labels=3,
                     id2label={0: "ENTAILMENT", 1: "NEUTRAL", 2: "CONTRADICTION"},
                     label2id={"ENTAILMENT": 0, "NEUTRAL": 1, "CONTRADICTION": 2})
    BertForSequenceClassification(cfg).save_pretrained(folder)
    return folder


def scripted_chains(one):
    """A stand-in for ``Attacker.answer_first_many``: each row is answered by ``one(...)``.

    ``one`` is called as ``one(attacker, layout, question_embeds)``.

    Tests script the answer-first chains with ``monkeypatch.setattr(Attacker, "answer_first_many",
    scripted_chains(fake))``.
    """

    def many(self, layouts, question_embeds_list=None):
        qs = question_embeds_list if question_embeds_list is not None else [None] * len(layouts)
        return [one(self, layout, q) for layout, q in zip(layouts, qs, strict=True)]

    return many




class RawServer:
    """A server on 127.0.0.1 whose ``handler(path) -> (status, headers, body bytes)`` decides every reply.

    For byte-level replies (encodings, redirects, oversized bodies) that :class:`FakeOpenAIServer` does not
    script. ``paths`` records ``(path, Authorization, Accept-Encoding)`` of each request; ``root`` is its address.
    """

    def __init__(self, handler):
        self.handler, self.paths = handler, []
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args):
                pass

            def _any(self):
                length = int(self.headers.get("Content-Length", 0))
                self.rfile.read(length)
                server.paths.append((self.path, self.headers.get("Authorization"), self.headers.get("Accept-Encoding")))
                status, headers, body = server.handler(self.path)
                self.send_response(status)
                for k, v in headers.items():
                    self.send_header(k, v)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            do_POST = do_GET = _any

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True

    @property
    def root(self) -> str:
        """``http://127.0.0.1:PORT``."""
        return f"http://127.0.0.1:{self.httpd.server_address[1]}"

    def __enter__(self):
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()
        return self

    def __exit__(self, *exc):
        self.httpd.shutdown()
        self.httpd.server_close()


def default_reply(body: dict) -> str:
    """The fake server's answer when a test scripts none: two steps and ``Answer: 42``."""
    return "Step one.\nStep two.\nAnswer: 42"


class FakeOpenAIServer:
    """An OpenAI-compatible chat-completions server on 127.0.0.1, used as a context manager.

    ``faults={n: fault}``: request n (1-based, arrival order) gets ``fault``: 429, 500, ``"drop"``
    (close without answering), ``"timeout"`` (sleep past the client's timeout), ``"badjson"``, or a
    dict ``{"status": 429, "headers": {"Retry-After": "2"}}`` (any status, headers and JSON ``body``);
    ``fault_for(n, body)`` may decide instead. ``reply(body)`` gives the answer: a text, or a dict that
    is the reply's ``message`` (``{"content": None, "refusal": "..."}``), with an optional
    ``finish_reason`` key. Each answer waits ``latency_s`` plus ``completion_tokens / tokens_per_s``.

    Bounded: after ``max_requests`` requests every request gets 503, and the server shuts itself
    down after ``lifetime_s`` seconds, so a client that retries forever cannot hang a test.
    ``count`` / ``served`` / ``bodies`` / ``arrivals`` (``time.monotonic()`` of each request) record
    what came in.
    """

    def __init__(self, faults=None, fault_for=None, latency_s: float = 0.0, reply=default_reply,
                 timeout_sleep_s: float = 3.0, tokens_per_s: float | None = None, max_requests: int = 100_000,
                 lifetime_s: float = 600.0):
        self.faults = dict(faults or {})
        self.fault_for = fault_for
        self.latency_s = latency_s
        self.reply = reply
        self.timeout_sleep_s = timeout_sleep_s
        self.tokens_per_s = tokens_per_s
        self.max_requests = max_requests
        self.lifetime_s = lifetime_s
        self.count = 0
        self.served = 0
        self.lock = threading.Lock()
        self.bodies: list[dict] = []
        self.auth_headers: list[str] = []
        self.arrivals: list[float] = []
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args):
                pass

            def setup(self):
                super().setup()
                # one segment per reply: no Nagle / delayed-ACK stall between headers and body
                self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

            def do_POST(self):
                length = int(self.headers.get("Content-Length", 0))
                body = json.loads(self.rfile.read(length) or b"{}")
                with server.lock:
                    server.count += 1
                    n = server.count
                    server.bodies.append(body)
                    server.auth_headers.append(self.headers.get("Authorization", "")
                                               or self.headers.get("x-api-key", ""))
                    server.arrivals.append(time.monotonic())
                if n > server.max_requests:
                    return self._send(503, {"error": {"message": "request budget of the fake server spent"}})
                fault = server.fault_for(n, body) if server.fault_for else server.faults.get(n)
                if server.latency_s:
                    time.sleep(server.latency_s)
                if fault == "drop":
                    self.close_connection = True
                    self.connection.close()
                    return
                if fault == "timeout":
                    time.sleep(server.timeout_sleep_s)
                    return self._send(200, {"late": True})
                if fault in (429, 500, "429", "500"):
                    return self._send(int(fault), {"error": {"message": f"simulated {fault}"}})
                if isinstance(fault, dict):
                    return self._send(int(fault["status"]), fault.get("body") or
                                      {"error": {"message": f"simulated {fault['status']}"}}, fault.get("headers"))
                if fault == "badjson":
                    data = b'{"id": "x", "choices": [ {"message": '
                    self.send_response(200)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(data)))
                    self.end_headers()
                    self.wfile.write(data)
                    return
                answer = server.reply(body)
                text = answer if isinstance(answer, str) else str(answer.get("content") or "")
                if server.tokens_per_s:
                    time.sleep(len(text.split()) / server.tokens_per_s)
                with server.lock:
                    server.served += 1
                self._send(200, server.response(n, body, answer, len(text.split())))

            def _send(self, status, payload, headers=None):
                data = json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                for k, v in (headers or {}).items():
                    self.send_header(k, str(v))
                self.end_headers()
                self.wfile.write(data)

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self._timer = threading.Timer(lifetime_s, self.httpd.shutdown)
        self._timer.daemon = True

    def response(self, n: int, body: dict, answer, words: int) -> dict:
        """The JSON of a successful reply (OpenAI chat completion)."""
        message = {"role": "assistant", "content": answer} if isinstance(answer, str) else \
            {"role": "assistant", **{k: v for k, v in answer.items() if k != "finish_reason"}}
        finish = "stop" if isinstance(answer, str) else answer.get("finish_reason", "stop")
        return {"id": f"cmpl-{n}", "object": "chat.completion", "created": 0, "model": body.get("model"),
                "choices": [{"index": 0, "finish_reason": finish, "message": message}],
                "usage": {"prompt_tokens": 10, "completion_tokens": words, "total_tokens": 10 + words}}

    @property
    def base_url(self) -> str:
        """The server's base URL, ``http://127.0.0.1:<port>/v1``."""
        return f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"

    def __enter__(self):
        self.thread.start()
        self._timer.start()
        return self

    def __exit__(self, *exc):
        self._timer.cancel()
        self.httpd.shutdown()
        self.httpd.server_close()


class FakeAnthropicServer(FakeOpenAIServer):
    """The same server speaking Anthropic's Messages API (``POST /v1/messages``).

    ``reply(body)`` gives a text, or a dict with ``content`` (a list of blocks) and ``stop_reason``.
    """

    def response(self, n: int, body: dict, answer, words: int) -> dict:
        """The Messages API body for request ``n``: ``answer`` (text or content blocks), ``words`` tokens."""
        if isinstance(answer, str):
            answer = {"content": [{"type": "text", "text": answer}], "stop_reason": "end_turn"}
        return {"id": f"msg-{n}", "type": "message", "role": "assistant", "model": body.get("model"),
                "content": answer.get("content", []), "stop_reason": answer.get("stop_reason", "end_turn"),
                "stop_sequence": None, "usage": {"input_tokens": 10, "output_tokens": words}}

    @property
    def base_url(self) -> str:
        """The server's base URL, ``http://127.0.0.1:<port>`` (the SDK adds ``/v1``)."""
        return f"http://127.0.0.1:{self.httpd.server_address[1]}"


def serve_main(argv: list[str] | None = None) -> None:
    """``python -m reasonscope.testing --latency 0.1 --port-file F``.

    Run the fake server in its own process (benchmarks), write its base URL to F, serve until killed.
    """
    import argparse

    ap = argparse.ArgumentParser()
    ap.add_argument("--latency", type=float, default=0.1)
    ap.add_argument("--tokens-per-s", type=float, default=None)
    ap.add_argument("--port-file", required=True)
    args = ap.parse_args(argv)
    with FakeOpenAIServer(latency_s=args.latency, tokens_per_s=args.tokens_per_s) as srv:
        Path(args.port_file).write_text(srv.base_url)
        while True:
            time.sleep(3600)


if __name__ == "__main__":
    serve_main()
