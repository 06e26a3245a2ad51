"""gathered_lm_head with a stand-in for ZeRO-3 partitioned parameters (no deepspeed needed):
the gather path is taken, the tensors it yields give the same R_cf as unsharded weights, tied
embeddings are gathered once, and whole parameters are used as they are."""

from __future__ import annotations

import enum
import sys
import types

import pytest
import torch
from torch import nn
from transformers import LlamaConfig, LlamaForCausalLM

from gc2po.core.counterfactual import CounterfactualParams
from gc2po.training.distributed import gathered_lm_head, is_zero3_param

CF_PARAMS = CounterfactualParams(
    perturbation=["dropout", "gaussian"],
    num_perturbations=4,
    cf_tau=0.1,
    lambda_exp=0.9,
    lambda_sta=1.0,
    cf_eps_u=1e-6,
    answer_space="vocab",
    answer_topk=64,
)


class Status(enum.Enum):  # the names DeepSpeed's ZeroParamStatus uses
    NOT_AVAILABLE = 1
    INFLIGHT = 2
    AVAILABLE = 3


class FakeGatheredParameters:
    """deepspeed.zero.GatheredParameters stand-in: fills the data on enter, empties it on exit."""

    calls: list = []

    def __init__(self, params, modifier_rank=0):
        self.params = list(params)
        FakeGatheredParameters.calls.append((self.params, modifier_rank))

    def __enter__(self):
        for p in self.params:
            p.data, p.ds_status = p.ds_full, Status.AVAILABLE

    def __exit__(self, *exc):
        for p in self.params:
            p.data, p.ds_status = torch.empty(0, dtype=p.dtype), Status.NOT_AVAILABLE


@pytest.fixture
def fake_deepspeed(monkeypatch):
    FakeGatheredParameters.calls = []
    module = types.SimpleNamespace(
        zero=types.SimpleNamespace(GatheredParameters=FakeGatheredParameters)
    )
    monkeypatch.setitem(sys.modules, "deepspeed", module)
    return FakeGatheredParameters


def is_zero3_sharded(model) -> bool:
    """True when any parameter of ``model`` is DeepSpeed ZeRO-3 partitioned."""
    return any(is_zero3_param(p) for p in model.parameters())


def shard(param: nn.Parameter, ds_id: int) -> None:
    """Make ``param`` look like a ZeRO-3 partition on this rank: zero elements,
    the rest elsewhere."""
    param.ds_full = param.data.clone()
    param.ds_id, param.ds_shape, param.ds_status = ds_id, param.shape, Status.NOT_AVAILABLE
    param.data = torch.empty(0, dtype=param.dtype)


def r_cf(weight, bias=None):
    states = torch.randn(5, weight.shape[1], generator=torch.Generator().manual_seed(1))
    return CF_PARAMS.reward(
        states, weight, lm_head_bias=bias, generator=torch.Generator().manual_seed(2)
    ).r_cf


def tiny_llama(tied: bool) -> LlamaForCausalLM:
    torch.manual_seed(0)
    return LlamaForCausalLM(
        LlamaConfig(
            vocab_size=50,
            hidden_size=16,
            intermediate_size=32,
            num_hidden_layers=1,
            num_attention_heads=2,
            num_key_value_heads=1,
            tie_word_embeddings=tied,
        )
    )


def test_gather_path_taken_for_sharded_head_with_bias(fake_deepspeed):
    head = nn.Linear(16, 50, bias=True)
    expected = r_cf(head.weight.detach(), head.bias.detach())
    shard(head.weight, 1)
    shard(head.bias, 2)
    assert is_zero3_param(head.weight) and is_zero3_sharded(head) and head.weight.numel() == 0
    with gathered_lm_head(head) as (weight, bias):
        assert weight.shape == (50, 16) and bias.shape == (50,)
        got = r_cf(weight, bias)
    ((params, modifier_rank),) = fake_deepspeed.calls
    assert [id(p) for p in params] == [id(head.weight), id(head.bias)] and modifier_rank is None
    assert head.weight.numel() == 0 and head.bias.numel() == 0  # re-partitioned on exit
    torch.testing.assert_close(got, expected, rtol=0, atol=1e-6)


@pytest.mark.parametrize("tied", [False, True], ids=["untied", "tied"])
def test_gather_llama_head_gathers_each_parameter_once(fake_deepspeed, tied):
    model = tiny_llama(tied)
    expected = r_cf(model.lm_head.weight.detach())
    for ds_id, param in enumerate(model.parameters()):  # tied: lm_head.weight is listed once
        shard(param, ds_id)
    assert is_zero3_sharded(model) and model.lm_head.weight.numel() == 0
    with gathered_lm_head(model) as (weight, bias):
        got = r_cf(weight, bias)
        assert bias is None and weight.shape == (50, 16)
    ((params, _),) = fake_deepspeed.calls
    assert len(params) == 1 and params[0] is model.lm_head.weight
    assert (model.lm_head.weight is model.model.embed_tokens.weight) is tied
    torch.testing.assert_close(got, expected, rtol=0, atol=1e-6)


def test_already_available_parameter_is_not_gathered_again(fake_deepspeed):
    """Inside the embedding's forward a tied head is already whole: no second gather, no
    re-partition on exit (the pitfall TRL's maybe_gather_lm_head_ctx avoids the same way)."""
    head = nn.Linear(16, 50, bias=False)
    shard(head.weight, 1)
    with fake_deepspeed([head.weight]):
        with gathered_lm_head(head) as (weight, _):
            assert weight.shape == (50, 16)
        assert head.weight.shape == (50, 16)  # still whole after the inner block
    assert len(fake_deepspeed.calls) == 1  # only the outer one


def test_whole_parameters_are_used_as_they_are(monkeypatch):
    monkeypatch.setitem(sys.modules, "deepspeed", None)  # importing it would fail
    model = tiny_llama(tied=False)
    assert not is_zero3_sharded(model)
    with gathered_lm_head(model) as (weight, bias):
        assert weight is model.lm_head.weight and bias is None


def test_model_without_output_projection_is_named():
    with pytest.raises(ValueError, match="Sequential has no output projection"):
        with gathered_lm_head(nn.Sequential()):
            pass
