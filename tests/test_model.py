"""ArithModel: training forward, KV-cache greedy decoding, pretrained loading and save/load."""

from __future__ import annotations

import pytest
import torch
from transformers import GPT2Config, GPT2LMHeadModel, PreTrainedTokenizerFast

from arith.config import DataConfig, ModelConfig
from arith.data.tasks import render_example
from arith.model.gpt import ROW_BUCKET, build_model, load_folder, next_token_loss, weighted_rows_loss
from arith.model.schemes import POSITION_SCHEMES
from arith.model.tokenizer import build_tokenizer, tokenizer_for
from arith.training.decoding import left_pad

#: the task the models are built for (position coupling reads its digit order; the others ignore it)
DATA = DataConfig(task="add", format="padding_reverse")


def tokenizer():
    """The project's digit-aware tokenizer (one token per spaced digit)."""
    return build_tokenizer()


def tiny_model(position: str, tok=None, **overrides):
    torch.manual_seed(0)
    cfg = ModelConfig(preset="nano", n_positions=64, position=position, **overrides)
    return build_model(cfg, tok or tokenizer(), DATA)


def prompts(tok, texts: list[str]) -> tuple[torch.Tensor, torch.Tensor]:
    return left_pad(tok([" " + t for t in texts], add_special_tokens=False)["input_ids"], tok.pad_token_id)


def addition_batch(tok, n: int, seed: int) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Right-padded 1-2-digit padded-reverse additions with an answer-only loss mask."""
    rng = torch.Generator().manual_seed(seed)
    rows, starts = [], []
    for a, b in torch.randint(0, 100, (n, 2), generator=rng).tolist():
        e = render_example("add", "padding_reverse", a, b, max_digits=2)
        prompt = tok(" " + e.prompt, add_special_tokens=False)["input_ids"]
        answer = tok(e.answer, add_special_tokens=False)["input_ids"] + [tok.eos_token_id]
        rows.append(prompt + answer)
        starts.append(len(prompt))
    width = max(map(len, rows))
    ids = torch.full((n, width), tok.pad_token_id)
    mask = torch.zeros(n, width, dtype=torch.long)
    learn = torch.zeros(n, width)
    for i, (row, start) in enumerate(zip(rows, starts, strict=True)):
        ids[i, : len(row)] = torch.tensor(row)
        mask[i, : len(row)] = 1
        learn[i, start : len(row)] = 1
    return ids, mask, learn


@pytest.mark.parametrize("position", POSITION_SCHEMES)
def test_each_scheme_trains_and_its_loss_falls(position):
    tok = tokenizer()
    model = tiny_model(position, tok).train()
    optimizer = torch.optim.AdamW([p for p in model.parameters() if p.requires_grad], lr=3e-3)
    ids, mask, learn = addition_batch(tok, 32, seed=0)
    losses = []
    for step in range(20):
        model.new_epoch(step)
        loss = model(ids, mask, learn).loss
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    assert losses[-1] < 0.6 * losses[0], losses


def test_loss_is_the_mean_over_weighted_target_tokens():
    tok = tokenizer()
    model = tiny_model("learned", tok).eval()
    ids, mask, learn = addition_batch(tok, 4, seed=1)
    out = model(ids, mask, learn)
    logp = out.logits[:, :-1].log_softmax(-1).gather(-1, ids[:, 1:, None])[..., 0]
    expected = -(logp * learn[:, 1:]).sum() / learn[:, 1:].sum()
    assert torch.allclose(out.loss, expected, atol=1e-5)
    no_mask = model(ids, mask).loss  # default: every real token after the first
    assert torch.allclose(no_mask, -(logp * mask[:, 1:]).sum() / mask[:, 1:].sum(), atol=1e-5)


@pytest.mark.parametrize("position", ["learned", "randomized"])
def test_loss_only_head_gives_the_same_loss_and_gradients(position):
    """logits=False runs the LM head on the answer's columns only: same loss and gradients (float64)."""
    tok = tokenizer()
    model = tiny_model(position, tok).double().train()
    ids, mask, learn = addition_batch(tok, 8, seed=2)
    grads = []
    for logits in (True, False):
        model.zero_grad()
        out = model(
            ids,
            mask,
            learn,
            positions=model.draw_positions(mask, torch.Generator().manual_seed(3)),
            logits=logits,
        )
        assert (out.logits is None) == (not logits)
        out.loss.backward()
        grads.append((out.loss.detach(), [p.grad.clone() for p in model.parameters() if p.grad is not None]))
    (full, full_grads), (rows, rows_grads) = grads
    assert torch.allclose(full, rows, atol=1e-12)
    assert len(full_grads) == len(rows_grads)
    assert all(torch.allclose(a, b, atol=1e-10) for a, b in zip(full_grads, rows_grads, strict=True))


@pytest.mark.parametrize("position", POSITION_SCHEMES)
def test_kv_cache_greedy_equals_step_by_step_argmax_without_cache(position):
    """Same draw (tags, random ids, offsets) for the sequence in both; float64 so ties cannot flip."""
    tok = tokenizer()
    model = tiny_model(position, tok).double().eval()
    ids, mask = prompts(tok, ["1 2 + 3 4 =", "5 * 6 #", "1 2 3 4 5 6 7 8 + 9 ="])
    steps = 6
    state = model.draw_positions(
        torch.cat([mask, torch.ones(3, steps, dtype=torch.long)], 1), torch.Generator().manual_seed(3)
    )
    cached = model.generate_greedy(ids, mask, steps, eos_token_id=None, positions=state)
    seq, seq_mask = ids, mask
    with torch.no_grad():
        for _ in range(steps):
            token = model(seq, seq_mask, positions=state).logits[:, -1].argmax(-1, keepdim=True)
            seq, seq_mask = torch.cat([seq, token], 1), torch.cat([seq_mask, torch.ones_like(token)], 1)
    assert torch.equal(cached, seq[:, ids.shape[1] :])


@pytest.mark.parametrize("position", ["learned", "none", "abacus", "coupling"])
def test_left_padding_does_not_change_a_prompt_s_answer(position):
    tok = tokenizer()
    model = tiny_model(position, tok).double().eval()
    texts = ["1 2 + 3 4 =", "9 9 9 9 9 9 + 1 ="]
    ids, mask = prompts(tok, texts)
    together = model.generate_greedy(ids, mask, 5, eos_token_id=None)
    alone = model.generate_greedy(*prompts(tok, texts[:1]), 5, eos_token_id=None)
    assert torch.equal(together[:1], alone)


def test_random_embed_tags_stay_fixed_through_generation_and_are_fresh_per_draw():
    tok = tokenizer()
    model = tiny_model("random_embed", tok).eval()
    ids, mask = prompts(tok, ["1 2 3 + 4 5 6 ="] * 8)
    a = model.generate_greedy(ids, mask, 6, None, generator=torch.Generator().manual_seed(0))
    b = model.generate_greedy(ids, mask, 6, None, generator=torch.Generator().manual_seed(0))
    assert torch.equal(a, b)  # the same seed gives the same tags
    logits_by_seed = [
        model(ids[:1], mask[:1], generator=torch.Generator().manual_seed(s)).logits[0, -1] for s in (0, 1)
    ]
    assert not torch.allclose(*logits_by_seed)  # fresh tags change the output


def test_generation_stops_after_every_row_ends_and_pads_with_eos():
    tok = tokenizer()
    model = tiny_model("learned", tok).eval()
    ids, mask = prompts(tok, ["1 + 2 =", "3 + 4 ="])
    eos_only = torch.zeros(len(tok))
    eos_only[tok.eos_token_id] = 1e4  # make eos the only thing the model ever says
    model.lm.lm_head.register_forward_hook(lambda module, args, logits: logits + eos_only)
    out = model.generate_greedy(ids, mask, 50, eos_token_id=tok.eos_token_id)
    assert out.shape[1] < 50 and torch.all(out == tok.eos_token_id)


def test_forward_and_generation_run_under_bf16_autocast():
    tok = tokenizer()
    model = tiny_model("random_embed", tok)
    ids, mask, learn = addition_batch(tok, 8, seed=2)
    with torch.autocast("cpu", dtype=torch.bfloat16):
        loss = model(ids, mask, learn).loss
        loss.backward()
        out = model.eval().generate_greedy(*prompts(tok, ["1 + 2 ="]), 4, tok.eos_token_id)
    assert torch.isfinite(loss) and loss.dtype == torch.float32 and out.shape[0] == 1


def save_tiny_pretrained(path, tok) -> GPT2LMHeadModel:
    """What a user has: a GPT-2 and its tokenizer written with save_pretrained."""
    torch.manual_seed(1)
    config = GPT2Config(vocab_size=len(tok), n_positions=64, n_embd=32, n_layer=2, n_head=4)
    lm = GPT2LMHeadModel(config)
    lm.save_pretrained(path)
    tok.save_pretrained(path)
    return lm


@pytest.mark.parametrize("position", ["learned", "none", "random_embed"])
def test_pretrained_loading_from_a_saved_directory(tmp_path, position):
    saved = save_tiny_pretrained(tmp_path, tokenizer())
    cfg = ModelConfig(init="pretrained", pretrained=str(tmp_path), position=position, preset="gpt2-small")
    tok = tokenizer_for(cfg)  # what the trainer does: the tokenizer saved beside the model
    model = build_model(cfg, tok)
    assert model.lm.config.n_embd == 32  # the checkpoint's sizes, not the preset's
    assert torch.equal(model.lm.transformer.h[1].mlp.c_fc.weight, saved.transformer.h[1].mlp.c_fc.weight)
    assert torch.equal(model.lm.transformer.wte.weight, saved.transformer.wte.weight)
    wpe = model.lm.transformer.wpe.weight
    if position == "learned":
        assert torch.equal(wpe, saved.transformer.wpe.weight)
    else:
        assert torch.count_nonzero(wpe) == 0 and not wpe.requires_grad
    if position == "random_embed":
        assert model.scheme.n_hash == 8  # n_embd // 4 of the loaded model


def test_pretrained_embeddings_grow_to_a_larger_tokenizer(tmp_path):
    tok = tokenizer()
    save_tiny_pretrained(tmp_path, tok)
    tok.add_tokens(["<extra>"])
    model = build_model(ModelConfig(init="pretrained", pretrained=str(tmp_path)), tok)
    assert model.lm.transformer.wte.weight.shape[0] == len(tok)
    assert model.lm.lm_head.weight.data_ptr() == model.lm.transformer.wte.weight.data_ptr()


def test_missing_pretrained_model_fails_with_a_clear_message(tmp_path):
    with pytest.raises(OSError, match="save_pretrained"):
        build_model(ModelConfig(init="pretrained", pretrained=str(tmp_path / "absent")), tokenizer())


@pytest.mark.parametrize("position", POSITION_SCHEMES)
def test_save_and_load_round_trip(tmp_path, position):
    tok = tokenizer()
    model = tiny_model(position, tok, n_hash=8)
    with torch.no_grad():
        for p in model.scheme.parameters():
            p.add_(1.0)  # learned scheme tables must survive too
    model.save(tmp_path, tok)
    loaded = load_folder(tmp_path).eval()
    model.eval()
    ids, mask = prompts(PreTrainedTokenizerFast.from_pretrained(tmp_path), ["1 2 + 3 4 ="])
    draw = model.draw_positions(mask, torch.Generator().manual_seed(0))
    assert loaded.scheme.name == position and loaded.cfg == model.cfg
    assert torch.allclose(model(ids, mask, positions=draw).logits, loaded(ids, mask, positions=draw).logits)


cuda = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")


@pytest.mark.gpu
@cuda
@pytest.mark.parametrize("position", POSITION_SCHEMES)
def test_cuda_bf16_training_and_exact_kv_cache_decoding(position):
    tok = tokenizer()
    model = tiny_model(position, tok).cuda().train()
    optimizer = torch.optim.AdamW([p for p in model.parameters() if p.requires_grad], lr=3e-3, fused=True)
    ids, mask, learn = (t.cuda() for t in addition_batch(tok, 32, seed=0))
    losses = []
    for step in range(20):
        model.new_epoch(step)
        with torch.autocast("cuda", dtype=torch.bfloat16):
            loss = model(ids, mask, learn).loss
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    assert losses[-1] < 0.6 * losses[0], losses

    model = model.double().eval()
    prompt_ids, prompt_mask = (t.cuda() for t in prompts(tok, ["1 2 + 3 4 =", "5 * 6 #", "9 9 9 9 + 1 ="]))
    full_mask = torch.cat([prompt_mask, torch.ones(3, 5, dtype=torch.long, device="cuda")], 1)
    state = model.draw_positions(full_mask, torch.Generator(device="cuda").manual_seed(0))
    cached = model.generate_greedy(prompt_ids, prompt_mask, 5, eos_token_id=None, positions=state)
    with torch.no_grad():  # one full recomputation over prompt + answer, with the same draw
        logits = model(torch.cat([prompt_ids, cached], 1), full_mask, positions=state).logits
    assert torch.equal(logits[:, prompt_ids.shape[1] - 1 : -1].argmax(-1), cached)


@pytest.mark.parametrize("autocast", [False, True])
def test_the_answer_only_loss_reads_bucketed_rows_under_bf16_on_a_cpu_and_is_the_same_loss(autocast):
    """oneDNN compiles a kernel per matrix shape under bf16: the LM head reads a multiple of ROW_BUCKET rows
    (weightless padding), so a run meets few shapes; the loss is the full-logits loss all the same, and in
    fp32 exactly the rows weighed, bit for bit as before."""
    torch.manual_seed(0)
    head = torch.nn.Linear(16, 11, bias=False)
    hidden, ids = torch.randn(4, 9, 16), torch.randint(0, 11, (4, 9))
    weights = (torch.rand(4, 8) < 0.4).float()
    read: list[int] = []
    head.register_forward_hook(lambda _m, args, _out: read.append(args[0].shape[0]))
    with torch.autocast("cpu", dtype=torch.bfloat16, enabled=autocast):
        rows = weighted_rows_loss(head, hidden, ids, weights)
        full = next_token_loss(head(hidden), ids, weights)
    assert read[0] == (ROW_BUCKET if autocast else int(weights.sum()))
    assert rows.item() == pytest.approx(full.item(), rel=1e-2 if autocast else 1e-6)
