"""Every private name of TRL, transformers (and accelerate) that gc2po uses is listed here and
still exists with the parameters we pass; an unlisted one fails.

An AST scan of gc2po/ finds each ``x._name`` it reads or calls and each ``_name`` method its
classes define. A name is ours when gc2po defines it (a method, or ``self._name = ...``) and no
library class in the MRO of a gc2po class has it; every other one must be in PINNED with its
owner, where it is checked: a method exists and accepts each call's positional count and keyword
names (``inspect.signature(...).bind``), and an override of ours takes the owner's parameters; an
instance attribute is still assigned as ``self._name`` in the owner's source. vLLM's internal
names (the CPU weight sync's engine path, names imported from vllm submodules) are listed in
VLLM_INTERNALS and checked in the vLLM CPU step (tests/vllm_cpu/test_vllm_private_names.py).
"""

from __future__ import annotations

import ast
import importlib
import importlib.util
import inspect
import pkgutil
import sys
import textwrap
from contextlib import nullcontext
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path

import pytest
import torch

import gc2po

ROOT = Path(__file__).resolve().parents[1]
METHOD, ATTRIBUTE = "method", "instance attribute"
GRPO = "trl.trainer.grpo_trainer:GRPOTrainer"
TRAINER = "transformers.trainer:Trainer"
GENERATION = "transformers.generation.utils:GenerationMixin"
# name -> (owner "module:Class", kind)
PINNED = {
    "_metrics": (GRPO, ATTRIBUTE),  # the logged metrics, {"train"|"eval": {name: [values]}}
    "_step": (GRPO, ATTRIBUTE),  # micro-steps so far (the perturbation seed)
    "_tokenizer": (GRPO, ATTRIBUTE),  # the pad token of the fast sampler
    "_generate_single_turn": (GRPO, METHOD),
    "_calculate_rewards": (GRPO, METHOD),
    "_generate_and_score_completions": (GRPO, METHOD),
    "_get_per_token_logps_and_entropies": (GRPO, METHOD),
    "_compute_loss": (GRPO, METHOD),
    "_clip_grad_norm": (TRAINER, METHOD),
    "_get_grad_norm": (TRAINER, METHOD),
    "_iter_named_params": ("trl.generation.vllm_generation:VLLMGeneration", METHOD),
    "_get_logits_processor": (GENERATION, METHOD),
    "_prepare_generation_config": (GENERATION, METHOD),
    "_is_overflow": ("accelerate.optimizer:AcceleratedOptimizer", ATTRIBUTE),  # step_was_skipped
}
# vLLM's internals that gc2po/training/vllm_cpu_sync.py reaches (checked in the vLLM CPU step):
# the attributes from TRL's engine (LLM) to the model runner, what is called on them, and the
# names imported from vllm's submodules (the top-level LLM and SamplingParams are its public API)
VLLM_ENGINE_PATH = ("llm_engine", "model_executor", "driver_worker", "model_runner")
# (positional arguments, keyword names) as the code passes them
VLLM_INTERNALS = {
    "vllm.model_executor.layers.utils:dispatch_cpu_unquantized_gemm": (1, ("remove_weight",)),
    "model_runner.reload_weights": (0, ("weights_iterator",)),
    "model_runner.get_model": (0, ()),
    "LLM.reset_prefix_cache": (0, ()),
}


def is_private(name: str) -> bool:
    return name.startswith("_") and not name.startswith("__")


@dataclass
class Uses:
    """What the scan found: per private name, where it is read, called and defined."""

    read: dict[str, list[str]] = field(default_factory=dict)  # name -> "file:line"
    calls: dict[str, list[tuple[int, tuple[str, ...], str]]] = field(default_factory=dict)
    defined: dict[str, list[tuple[ast.FunctionDef, str]]] = field(default_factory=dict)
    assigned: set[str] = field(default_factory=set)  # self._name = ...
    vllm_imports: set[str] = field(default_factory=set)  # "module:name" from vllm submodules


def _stdlib_aliases(tree: ast.AST) -> set[str]:
    """Names bound to standard-library modules (``import os``): ``os._exit`` is not a library's
    private name."""
    return {
        alias.asname or alias.name
        for node in ast.walk(tree)
        if isinstance(node, ast.Import)
        for alias in node.names
        if alias.name.split(".")[0] in sys.stdlib_module_names
    }


def scan(sources: dict[str, str]) -> Uses:
    """The private names of ``sources`` ({file: text})."""
    uses = Uses()
    for where, text in sources.items():
        tree = ast.parse(text)
        stdlib = _stdlib_aliases(tree)
        for node in ast.walk(tree):
            if isinstance(node, ast.ClassDef):
                for item in node.body:
                    if isinstance(item, ast.FunctionDef) and is_private(item.name):
                        uses.defined.setdefault(item.name, []).append((item, where))
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("vllm."):
                uses.vllm_imports |= {f"{node.module}:{alias.name}" for alias in node.names}
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
                _record_call(uses, node, stdlib, f"{where}:{node.lineno}")
            if not (isinstance(node, ast.Attribute) and is_private(node.attr)):
                continue
            if isinstance(node.value, ast.Name) and node.value.id in stdlib:
                continue
            if isinstance(node.ctx, ast.Store) and _on_self(node):
                uses.assigned.add(node.attr)
            else:
                uses.read.setdefault(node.attr, []).append(f"{where}:{node.lineno}")
    return uses


def _on_self(node: ast.Attribute) -> bool:
    return isinstance(node.value, ast.Name) and node.value.id == "self"


def _record_call(uses: Uses, node: ast.Call, stdlib: set[str], site: str) -> None:
    """A call ``x._name(...)``: its positional count and keyword names (skipped with *args)."""
    func = node.func
    if not is_private(func.attr) or any(isinstance(a, ast.Starred) for a in node.args):
        return
    if isinstance(func.value, ast.Name) and func.value.id in stdlib:
        return
    keywords = tuple(k.arg for k in node.keywords if k.arg is not None)
    uses.calls.setdefault(func.attr, []).append((len(node.args), keywords, site))


def package_sources() -> dict[str, str]:
    return {str(p.relative_to(ROOT)): p.read_text() for p in sorted((ROOT / "gc2po").rglob("*.py"))}


def resolve(owner: str) -> type:
    module, _, name = owner.partition(":")
    return getattr(importlib.import_module(module), name)


@cache
def library_classes() -> tuple[type, ...]:
    """The classes outside gc2po (and builtins) in the MRO of a class that gc2po defines."""
    found = {}
    for info in pkgutil.walk_packages(gc2po.__path__, "gc2po."):
        module = importlib.import_module(info.name)
        for value in vars(module).values():
            if isinstance(value, type) and value.__module__ == info.name:
                for base in value.__mro__:
                    if base.__module__.split(".")[0] not in ("gc2po", "builtins"):
                        found[f"{base.__module__}.{base.__qualname__}"] = base
    return tuple(found.values())


@cache
def self_assigned(cls: type) -> frozenset[str]:
    """The names assigned as ``self.<name> = ...`` in the source of ``cls`` and its MRO."""
    names = set()
    for klass in cls.__mro__:
        try:
            tree = ast.parse(textwrap.dedent(inspect.getsource(klass)))
        except (OSError, TypeError):
            continue
        names |= {
            node.attr
            for node in ast.walk(tree)
            if isinstance(node, ast.Attribute)
            and isinstance(node.ctx, ast.Store)
            and isinstance(node.value, ast.Name)
            and node.value.id == "self"
        }
    return frozenset(names)


def library_has(name: str) -> bool:
    return any(name in vars(c) or name in self_assigned(c) for c in library_classes())


def library_names(uses: Uses) -> set[str]:
    """The private names that are not ours: read or called but never defined by gc2po, or
    defined by gc2po over a library class's own (an override)."""
    ours = set(uses.defined) | uses.assigned
    used = set(uses.read) | set(uses.calls) | set(uses.defined)
    return {n for n in used if n not in ours or library_has(n)}


def _parameters(function) -> tuple[list[str], bool]:
    """(named parameters after self, whether it takes *args or **kwargs)."""
    params = list(inspect.signature(function).parameters.values())[1:]
    named = [p.name for p in params if p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)]
    return named, any(p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD) for p in params)


def _ast_parameters(node: ast.FunctionDef) -> tuple[list[str], bool]:
    args = node.args
    named = [a.arg for a in [*args.posonlyargs, *args.args, *args.kwonlyargs]][1:]
    return named, args.vararg is not None or args.kwarg is not None


def pin_problems(pinned: dict, uses: Uses) -> list[str]:
    """What no longer holds of ``pinned`` for the uses found; empty when everything does."""
    problems = []
    for name, (owner, kind) in sorted(pinned.items()):
        try:
            cls = resolve(owner)
        except (ImportError, AttributeError) as error:
            problems.append(f"{name}: owner {owner} not found ({error})")
            continue
        if kind == ATTRIBUTE:
            if name not in self_assigned(cls):
                problems.append(f"{name}: {owner} no longer assigns self.{name}")
            continue
        method = inspect.getattr_static(cls, name, None)
        if method is None or not callable(method):
            problems.append(f"{name}: {owner} has no method {name}")
            continue
        signature = inspect.signature(method)
        for positional, keywords, site in uses.calls.get(name, []):
            try:
                signature.bind(None, *[None] * positional, **dict.fromkeys(keywords))
            except TypeError as error:
                problems.append(f"{name} called at {site}: {owner}.{name}{signature}: {error}")
        theirs, _ = _parameters(method)
        for node, where in uses.defined.get(name, []):
            ours, open_ended = _ast_parameters(node)
            if ours != theirs[: len(ours)] or (len(ours) < len(theirs) and not open_ended):
                problems.append(f"{name} overridden in {where}{ours}: {owner} takes {theirs}")
    return problems


def vllm_problems(llm) -> list[str]:
    """What no longer holds of VLLM_INTERNALS on a vLLM engine ``llm`` (``vllm.LLM``, TRL's
    ``VLLMGeneration.llm``): each attribute of the engine path, and each name with the
    arguments we pass."""
    runner = llm
    for name in VLLM_ENGINE_PATH:
        runner = getattr(runner, name, None)
        if runner is None:
            return [f"{'.'.join(VLLM_ENGINE_PATH)}: the engine has no {name}"]
    holders, problems = {"LLM": llm, VLLM_ENGINE_PATH[-1]: runner}, []
    for key, (positional, keywords) in VLLM_INTERNALS.items():
        if ":" in key:
            try:
                function = resolve(key)
            except (ImportError, AttributeError) as error:
                problems.append(f"{key}: {error}")
                continue
        else:
            holder, _, name = key.partition(".")
            function = getattr(holders[holder], name, None)
            if not callable(function):
                problems.append(f"{key}: no such method")
                continue
        try:
            inspect.signature(function).bind(*[None] * positional, **dict.fromkeys(keywords))
        except TypeError as error:
            problems.append(f"{key}{inspect.signature(function)}: {error}")
    return problems


# --- the checks ------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def uses() -> Uses:
    return scan(package_sources())


def test_every_library_private_name_the_package_uses_is_pinned(uses):
    found = library_names(uses)
    assert found >= {"_metrics", "_compute_loss", "_get_logits_processor"}  # the scan sees them
    unlisted = {n: uses.read.get(n, []) + [w for _, w in uses.defined.get(n, [])] for n in found}
    unlisted = {n: where for n, where in unlisted.items() if n not in PINNED}
    assert not unlisted, f"private library names used but not in PINNED: {unlisted}"
    assert set(PINNED) <= found, f"pinned but no longer used: {set(PINNED) - found}"


def test_every_pinned_name_exists_with_the_parameters_we_pass(uses):
    assert pin_problems(PINNED, uses) == []


def test_every_vllm_internal_is_listed(uses):
    """The vLLM step checks VLLM_INTERNALS; here, that the code uses nothing else of vLLM's
    internals (imports from its submodules, and the engine path of the CPU weight sync)."""
    assert uses.vllm_imports == {k for k in VLLM_INTERNALS if ":" in k}
    sync = (ROOT / "gc2po" / "training" / "vllm_cpu_sync.py").read_text()
    assert ".llm." + ".".join(VLLM_ENGINE_PATH) + "\n" in sync
    assert {f"{VLLM_ENGINE_PATH[-1]}.{n}" for n in ("reload_weights", "get_model")} <= set(
        VLLM_INTERNALS
    )
    assert "runner.reload_weights(weights_iterator=" in sync and "runner.get_model()" in sync
    assert "generation.llm.reset_prefix_cache()" in sync


# --- the checks can fail ---------------------------------------------------------------------


def test_an_unlisted_private_name_is_found():
    source = "def grade(trainer):\n    return trainer._a_new_private_name(1, key=2)\n"
    uses = scan({"x.py": source})
    assert library_names(uses) == {"_a_new_private_name"}
    assert uses.calls["_a_new_private_name"] == [(1, ("key",), "x.py:2")]


def test_our_own_private_names_are_not_library_names():
    source = (
        "class Mine:\n    def _helper(self):\n        self._count = 1\n"
        "    def run(self):\n        return self._helper(), self._count\n"
        "import os\nos._exit\n"
    )
    assert library_names(scan({"x.py": source})) == set()


def test_a_removed_method_is_reported(uses, monkeypatch):
    from trl import GRPOTrainer

    monkeypatch.delattr(GRPOTrainer, "_compute_loss")
    assert pin_problems(PINNED, uses) == [f"_compute_loss: {GRPO} has no method _compute_loss"]


def test_a_changed_signature_is_reported(uses, monkeypatch):
    from transformers.generation.utils import GenerationMixin

    monkeypatch.setattr(GenerationMixin, "_prepare_generation_config", lambda self: None)
    problems = pin_problems(PINNED, uses)
    assert len(problems) == 1 and problems[0].startswith("_prepare_generation_config called at")


def test_an_override_whose_owner_gained_a_parameter_is_reported(uses, monkeypatch):
    from trl import GRPOTrainer

    monkeypatch.setattr(GRPOTrainer, "_compute_loss", lambda self, model, inputs, extra: None)
    problems = pin_problems(PINNED, uses)
    assert problems[-1] == (
        "_compute_loss overridden in gc2po/training/trainer.py['model', 'inputs']: "
        f"{GRPO} takes ['model', 'inputs', 'extra']"
    )
    # and our super() call no longer fits it either
    assert len(problems) == 2 and problems[0].startswith(
        "_compute_loss called at gc2po/training/trainer.py:"
    )
    assert problems[0].endswith("missing a required argument: 'extra'")


def test_an_attribute_no_longer_assigned_is_reported(uses):
    pins = {**PINNED, "_metrics": ("tests.test_private_names:Uses", ATTRIBUTE)}
    assert pin_problems(pins, uses) == [
        "_metrics: tests.test_private_names:Uses no longer assigns self._metrics"
    ]


def stub_engine(**runner_methods):
    """An object shaped like a vLLM engine along VLLM_ENGINE_PATH."""
    from types import SimpleNamespace

    target = SimpleNamespace(**runner_methods)
    for name in reversed(VLLM_ENGINE_PATH):
        target = SimpleNamespace(**{name: target})
    target.reset_prefix_cache = lambda: None
    return target


def test_the_vllm_check_reports_a_missing_or_changed_runner_method():
    """vllm_problems on stand-ins for the engine (the vLLM step runs it on a real one): a whole
    one passes (its imported function too where vllm is installed; reported where it is not)."""
    whole = stub_engine(reload_weights=lambda weights_iterator=None: None, get_model=lambda: 1)
    unimportable = (
        []
        if importlib.util.find_spec("vllm")
        else [k.split(":")[0] for k in VLLM_INTERNALS if ":" in k]
    )
    assert [p.split(":")[0] for p in vllm_problems(whole)] == unimportable
    problems = vllm_problems(stub_engine(get_model=lambda: 1))
    assert "model_runner.reload_weights: no such method" in problems
    problems = vllm_problems(
        stub_engine(reload_weights=lambda weights=None: 0, get_model=lambda: 1)
    )
    assert any(p.startswith("model_runner.reload_weights(weights=None): ") for p in problems)
    assert vllm_problems(object()) == [
        f"{'.'.join(VLLM_ENGINE_PATH)}: the engine has no llm_engine"
    ]


# --- the MRT continuation length, by value ---------------------------------------------------


@pytest.mark.parametrize("answer_tokens", [1, 7])
def test_mrt_forced_answers_are_exactly_answer_tokens_long(
    answer_tokens, tiny_model_dir, fast_tokenizer
):
    """MRT's forced answers (``gc2po.methods.mrt.forced_answer_success`` -> RolloutServices ->
    HFContinuations -> ``model.generate(max_new_tokens=...)``) run ``answer_tokens`` tokens,
    whatever the model's own generation config says: an EOS outside the vocabulary never ends one
    early."""
    from transformers import AutoModelForCausalLM

    from gc2po.methods.mrt import MRTSettings, forced_answer_success
    from gc2po.training.continuations import HFContinuations
    from gc2po.training.services import RolloutServices

    model = AutoModelForCausalLM.from_pretrained(tiny_model_dir)
    model.generation_config.max_new_tokens, model.generation_config.max_length = 3, 5
    never = model.config.vocab_size + 10
    generate = HFContinuations(lambda: nullcontext(model), never + 1, never, 1.0, 4, "cpu")
    lengths = []

    def recorded(contexts, max_new_tokens):
        out = generate(contexts, max_new_tokens)
        lengths.extend(len(c) for c in out)
        return out

    services = RolloutServices(
        generate=recorded,
        model_context=None,
        tokenizer=fast_tokenizer,
        outcome=lambda rows, texts: torch.zeros(len(texts)),
        rollout={
            "prompt_ids": torch.tensor([[5, 6, 7]]),
            "prompt_mask": torch.ones(1, 3, dtype=torch.long),
            "completion_ids": torch.tensor([[8, 9, 10, 11]]),
            "completion_mask": torch.ones(1, 4, dtype=torch.long),
        },
        gather=lambda t: t,
        step=0,
        temperature=1.0,
        max_completion_length=8,
    )
    settings = MRTSettings(
        num_stops=2, answer_tokens=answer_tokens, force_answer_text="The answer is"
    )
    torch.manual_seed(0)
    forced_answer_success(services, [0, 0], [2, 2], settings)  # equal contexts: no padding
    assert lengths == [answer_tokens] * 4
