"""Hostile inputs: each case of the reliability page's size and number bounds, run on one source tree.

Each case builds its hostile input (a local server's reply, a log archive, a file), runs it through
reasonscope and prints one JSON line: the outcome (stored text, error, pending), the seconds and the
process's peak memory. Run it once per tree to compare the code without a guard and with it; the tree is
the one on ``PYTHONPATH``:

    PYTHONPATH=src python benchmarks/hostile_bounds.py gzip /tmp/bounds/new
    PYTHONPATH=/tmp/old/src python benchmarks/hostile_bounds.py gzip /tmp/bounds/old

Cases: ``gzip`` (255 KB on the wire, 256 MiB decoded), ``negative`` (negative usage counts), ``absurd``
(10^12 completion tokens, ``tpm: 600``), ``big_count_tpm`` (2e9 tokens, ``tpm: 600``), ``redirect`` (a 307
to another origin), ``inspect`` / ``inspect2`` (a ``.eval`` whose sample unpacks to 1 GiB; ``inspect2`` has a
valid header, so an unguarded reader goes on to the sample), ``plan`` (4 MB of JSON Lines as the plan),
``plan2`` (a 4 MB JSON array as the plan), ``symlink`` (``output_dir`` through a link loop, ``validate`` and
``run``), ``lmeval`` (a one-line results file of 600 tasks), ``samples`` (``samples.jsonl`` of 3
predictions of 950,915 characters). A case that hangs is ended by the caller (``timeout 150 ...``).
"""

from __future__ import annotations

import asyncio
import json
import os
import resource
import subprocess
import sys
import time
import zipfile
import zlib
from pathlib import Path

if len(sys.argv) != 3:
    sys.exit(__doc__)
case, out = sys.argv[1], Path(sys.argv[2])
out.mkdir(parents=True, exist_ok=True)
os.environ["FAKE_KEY"] = "sk-x"


def chat(content="Answer: 42", usage=None, pad=0):
    body = {"id": "c", "object": "chat.completion", "created": 0, "model": "fake",
            "choices": [{"index": 0, "message": {"role": "assistant", "content": content}, "finish_reason": "stop"}],
            "usage": usage or {"prompt_tokens": 5, "completion_tokens": 3}}
    text = json.dumps(body).encode()
    return text[:-1] + b" " * pad + b"}"


def serve(handler):
    from reasonscope.testing import RawServer

    return RawServer(handler).__enter__().root  # left serving until the process ends


def generate(url, n=1, **kw):
    from reasonscope.models.base import GenerationRequest
    from reasonscope.models.registry import create_model
    from reasonscope.plan import ModelConfig

    model = create_model(ModelConfig(spec="openai-compatible/fake", base_url=url, api_key_env="FAKE_KEY",
                                     options={"retry_base_s": 0.01, "retry_cap_s": 0.02}, **kw))

    async def go():
        res = []
        for i in range(n):
            res += await model.generate([GenerationRequest([{"role": "user", "content": f"q{i}"}], 8, 0.0)])
        await model.aclose()
        return res
    return asyncio.run(go())


def show(cs):
    return [{"text": (c.text or "")[:40], "len": len(c.text or ""), "error": c.error, "pending": c.pending,
             "prompt_tokens": c.prompt_tokens, "completion_tokens": c.completion_tokens} for c in cs]


start = time.monotonic()
result = {}
if case == "gzip":
    z = zlib.compressobj(9, zlib.DEFLATED, zlib.MAX_WBITS | 16)
    head = chat()
    parts = [z.compress(head[:-1])]
    chunk = b" " * (1 << 20)
    for _ in range(256):
        parts.append(z.compress(chunk))
    parts += [z.compress(b"}"), z.flush()]
    body = b"".join(parts)
    del chunk
    result["rss_before_mb"] = round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)
    result["wire_bytes"] = len(body)
    url = serve(lambda p: (200, {"Content-Type": "application/json", "Content-Encoding": "gzip"}, body))
    result["completions"] = show(generate(url + "/v1", max_retries=1))
elif case == "negative":
    url = serve(lambda p: (200, {"Content-Type": "application/json"},
                           chat(usage={"prompt_tokens": -5, "completion_tokens": -40})))
    result["completions"] = show(generate(url + "/v1"))
elif case == "absurd":
    url = serve(lambda p: (200, {"Content-Type": "application/json"},
                           chat(usage={"prompt_tokens": 5, "completion_tokens": 10**12})))
    result["completions"] = show(generate(url + "/v1", n=2, tpm=600))
elif case == "big_count_tpm":
    url = serve(lambda p: (200, {"Content-Type": "application/json"},
                           chat(usage={"prompt_tokens": 5, "completion_tokens": 2_000_000_000})))
    result["completions"] = show(generate(url + "/v1", n=2, tpm=600))
elif case == "redirect":
    evil = serve(lambda p: (200, {"Content-Type": "application/json"}, chat("Answer: EVIL")))
    url = serve(lambda p: (307, {"Location": evil + p}, b""))
    result["completions"] = show(generate(url + "/v1"))
elif case == "inspect":
    path = out / "2026-01-01T00-00-00+00-00_t_abc.eval"
    if not path.exists():
        with zipfile.ZipFile(path, "w", compression=zipfile.ZIP_DEFLATED, compresslevel=1) as z:
            z.writestr("_journal/start.json", json.dumps({"version": 2}))
            with z.open("samples/1_epoch_1.json", "w", force_zip64=True) as m:
                chunk = b" " * (1 << 20)
                for _ in range(1024):
                    m.write(chunk)
    result["file_bytes"] = path.stat().st_size
    start = time.monotonic()
    p = subprocess.run([sys.executable, "-m", "reasonscope.cli", "score", "--from", "inspect", str(path),
                        "--output-dir", str(out), "--name", "x"], capture_output=True, text=True, timeout=None)
    result["exit"], result["output"] = p.returncode, (p.stdout + p.stderr)[-600:]
elif case == "plan":
    path = out / "notaplan.yaml"
    line = json.dumps({"id": "x", "input": "What is 2 + 2? *a &b", "target": "4", "prediction": "4"}) + "\n"
    path.write_text(line * (4 * 1024**2 // len(line)))
    result["file_bytes"] = path.stat().st_size
    start = time.monotonic()
    p = subprocess.run([sys.executable, "-m", "reasonscope.cli", "validate", str(path)], capture_output=True,
                       text=True)
    result["exit"], result["output"] = p.returncode, (p.stdout + p.stderr)[-600:]
elif case == "inspect2":
    from inspect_ai.log import EvalConfig, EvalDataset, EvalLog, EvalSample, EvalSpec, write_eval_log
    from inspect_ai.model import ModelOutput

    small = out / "small.eval"
    log = EvalLog(eval=EvalSpec(created="2026-01-01T00:00:00+00:00", task="t", dataset=EvalDataset(sample_ids=[1]),
                                model="mockllm/model", config=EvalConfig()), status="success",
                  samples=[EvalSample(id=1, epoch=1, input="What is 2 + 2?", target="4",
                                      output=ModelOutput.from_content("mockllm/model", "Answer: 4"))])
    write_eval_log(log, str(small), format="eval")
    path = out / "2026-01-01T00-00-00+00-00_t_abc.eval"
    with zipfile.ZipFile(small) as src, zipfile.ZipFile(path, "w", compression=zipfile.ZIP_DEFLATED,
                                                        compresslevel=1) as dst:
        for info in src.infolist():
            data = src.read(info)
            if info.filename.startswith("samples/"):
                with dst.open(info.filename, "w", force_zip64=True) as m:
                    m.write(data.rstrip()[:-1])
                    chunk = b" " * (1 << 20)
                    for _ in range(1024):
                        m.write(chunk)
                    m.write(b"}")
            else:
                dst.writestr(info.filename, data)
    result["file_bytes"] = path.stat().st_size
    start = time.monotonic()
    p = subprocess.run([sys.executable, "-m", "reasonscope.cli", "score", "--from", "inspect", str(path),
                        "--output-dir", str(out), "--name", "x"], capture_output=True, text=True)
    result["exit"], result["output"] = p.returncode, (p.stdout + p.stderr)[-600:]
elif case == "plan2":
    path = out / "data.json"
    recs = [{"id": f"x{i}", "input": "What is 2 + 2?", "target": "4", "choices": ["3", "4"]} for i in range(40_000)]
    path.write_text(json.dumps(recs, indent=1))
    result["file_bytes"] = path.stat().st_size
    start = time.monotonic()
    p = subprocess.run([sys.executable, "-m", "reasonscope.cli", "validate", str(path)], capture_output=True,
                       text=True)
    result["exit"], result["output"] = p.returncode, (p.stdout + p.stderr)[-600:]
elif case == "symlink":
    link = out / "loop"
    if not link.is_symlink():
        os.symlink(out / "loop2", link)
        os.symlink(link, out / "loop2")
    plan = out / "plan.yaml"
    plan.write_text(f"experiment: {{name: t, output_dir: {link}/runs}}\nmodels: [{{spec: mock/reasoner}}]\n"
                    "datasets: [{name: s, format: synthetic, size: 1}]\n")
    for cmd in ("validate", "run"):
        p = subprocess.run([sys.executable, "-m", "reasonscope.cli", cmd, str(plan)], capture_output=True, text=True)
        result[cmd] = {"exit": p.returncode, "output": " ".join((p.stdout + p.stderr).split())[-400:]}
elif case == "lmeval":
    date = "2026-01-01T00-00-00.000001"
    res = {"results": {f"task_{i}": {"exact_match,none": 0.5, "alias": f"task {i}" * 20} for i in range(600)},
           "configs": {}, "n-samples": {}}
    path = out / f"results_{date}.json"
    path.write_text(json.dumps(res))
    (out / f"samples_gsm8k_{date}.jsonl").write_text("")
    p = subprocess.run([sys.executable, "-m", "reasonscope.cli", "score", "--from", "lm-eval", str(path),
                        "--output-dir", str(out), "--name", "x"], capture_output=True, text=True)
    result["exit"], result["output"] = p.returncode, " ".join((p.stdout + p.stderr).split())[-400:]
elif case == "samples":
    pred = "<think>" + "I think. " * 100_000 + "</think>\n" + " ".join(f"Step {i} adds one apple." for i in range(2_000)) + "\nAnswer: 4"
    path = out / "p.jsonl"
    path.write_text("".join(json.dumps({"id": f"a{i}", "input": f"What is {i}?", "target": "4", "prediction": pred}) + "\n"
                            for i in range(3)))
    p = subprocess.run([sys.executable, "-m", "reasonscope.cli", "score", "-i", str(path), "--output-dir", str(out),
                        "--name", "x"], capture_output=True, text=True)
    result["exit"] = p.returncode
    result["prediction_chars"] = len(pred)
    result["samples_bytes"] = (out / "x" / "samples.jsonl").stat().st_size if p.returncode == 0 else p.stderr[-300:]
result["seconds"] = round(time.monotonic() - start, 2)
result["peak_rss_mb"] = round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)
print(json.dumps(result, default=str))
