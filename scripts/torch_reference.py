"""The `small` Transformer and its training step in PyTorch eager: the yardstick for `python -m train bench`.

The same model as transformer/model.py (pre-LN encoder-decoder, sinusoidal positions, embeddings scaled by
sqrt(d_model), one token embedding for source, target and output, the same weight initialisation), the same step as
train/loop/step.py (label-smoothed cross-entropy with padding ignored, backward, clipping, Adam (0.9, 0.98, 1e-9), the
warm-up schedule) and the same synthetic batch as the bench, byte for byte, so that the two step times compare
one engine with the other and nothing else. Module names follow ours, so our state dict loads into this model
(tests/training/test_torch_reference.py checks that both give the same loss and gradients).

    pip install -e '.[reference]'      # PyTorch; only this script uses it
    python scripts/torch_reference.py --preset small [--device cpu|cuda] [--steps 10] [--warmup-steps 2]
        [--batch-size N] [--seq-len 32] [--seed 0] [--threads N] [--json] [--count-kernels] [--host]

The defaults are those of `python -m train bench`. Compare runs made back to back: a shared machine is noisy.

`--count-kernels` profiles one step (after the warm-up) with torch.profiler and counts PyTorch's kernel-making calls
by the rule the CuPy stand-in counts ours (tests/cupy_standin/README.md): the leaf ATen calls (those that call no
other kernel-making ATen op: `mm`, which calls only `resolve_conj`, is a leaf) minus views, metadata and allocation
(`view`, `permute`, `empty`, ...) and host reads (`item`), split into forward+loss, backward, update (zeroing,
clipping, Adam) and the step's read, with Adam and clipping in their `foreach=True` form, as PyTorch runs them on
CUDA. How the CPU's calls stand for CUDA launches (KERNELS_AS_CUDA): a `_foreach_*` op, which the CPU runs as one ATen
call per tensor, is on CUDA one kernel per chunk of its tensor lists (multi_tensor_apply: at most 110/64/48/36/30
tensors for 1-5 lists and 320 blocks of 65,536 elements a launch), and 0-d lists (Adam's step counters, host tensors
on CUDA) launch nothing; dropout, three CPU calls, is CUDA's one fused `native_dropout`; scaled_dot_product_attention
is one launch forward and two backward (CUDA's memory-efficient kernels). Everything else is one launch a leaf call.
It needs no GPU: `--device cpu` profiles the CPU run.

`--host` is the twin of `python -m train bench --host` (train/commands/bench/host_mode.py): the preset's structure at
tiny sizes, the host time of forward+loss, backward and the update per step (medians), and the function calls of one
step counted by cProfile, as that command counts ours.
"""
import argparse
import contextlib
import cProfile
import json
import math
import platform
import pstats
import resource
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))   # the project, also when it is not pip-installed

try:
    import torch
    import torch.nn.functional as F
    from torch import nn
except ImportError as e:   # a one-line answer, not a traceback: torch is an optional extra
    sys.exit(f"torch_reference.py needs PyTorch ({e}): pip install torch, or pip install -e '.[reference]'")

from minitorch.optim.schedule import noam_factor, warmup_lr
from train.cli.arguments import non_negative_int, positive_int
from train.data.batching import training_batch
from train.commands.bench import SEQ_LEN, build_model, synthetic_batch
from train.commands.bench.host_mode import SENTENCES as HOST_SENTENCES, SEQ_LEN as HOST_SEQ_LEN, VOCAB as HOST_VOCAB
from train.commands.bench.host_mode import tiny_preset
from train.run.presets import PRESETS
from transformer.registry import model_config
from train.data.tokenizer import PAD_ID


# ----- the model (Vaswani et al. 2017, section 3), as transformer/ builds it -----
def xavier_linear(d_in, d_out, n_blocks=1):
    """nn.Linear with Xavier-uniform weights drawn per d_out/n_blocks row block (a fused Q/K/V projection starts like
    separate ones) and zero bias: transformer/init.py."""
    linear = nn.Linear(d_in, d_out)
    a = math.sqrt(6.0 / (d_in + d_out // n_blocks))
    nn.init.uniform_(linear.weight, -a, a)
    nn.init.zeros_(linear.bias)
    return linear


class Embeddings(nn.Embedding):
    """Token ids -> vectors times sqrt(d_model) (section 3.4); N(0, 1/d_model) so that the product has unit variance."""

    def __init__(self, vocab_size, d_model, pad_id):
        super().__init__(vocab_size, d_model, padding_idx=pad_id)
        nn.init.normal_(self.weight, 0.0, d_model ** -0.5)
        with torch.no_grad():
            self.weight[pad_id] = 0
        self.scale = math.sqrt(d_model)

    def forward(self, ids):
        return super().forward(ids) * self.scale


class PositionalEncoding(nn.Module):
    """x + PE[pos], then dropout. PE[pos, 2i] = sin(pos / 10000^(2i/d_model)), PE[pos, 2i+1] = cos(...) (section 3.5),
    or a learned table."""

    def __init__(self, d_model, max_len, dropout, learned=False):
        super().__init__()
        self.dropout = nn.Dropout(dropout)
        if learned:
            self.table = nn.Parameter(torch.randn(max_len, d_model) * d_model ** -0.5)
        else:   # computed in float64, as ours, then stored as float32; not a parameter, not in the state dict
            angle = torch.arange(max_len, dtype=torch.float64)[:, None] * torch.exp(
                -math.log(10000.0) * torch.arange(0, d_model, 2, dtype=torch.float64) / d_model)
            table = torch.zeros(max_len, d_model, dtype=torch.float64)
            table[:, 0::2] = torch.sin(angle)
            table[:, 1::2] = torch.cos(angle)[:, : d_model // 2]
            self.register_buffer("table", table.float(), persistent=False)

    def forward(self, x):
        return self.dropout(x + self.table[: x.shape[1]])


class MultiHeadAttention(nn.Module):
    """MultiHead(Q, K, V) = Concat(head_1, ..., head_h) W_O, head_i = Attention(Q W_Q_i, K W_K_i, V W_V_i).

    Like ours: self-attention projects Q, K, V with one (3 d_model, d_model) matrix; cross-attention projects Q from
    the decoder and K, V from the memory with one (2 d_model, d_model) matrix. No dropout on the attention weights.
    """

    def __init__(self, d_model, n_heads, cross=False):
        super().__init__()
        self.d_model, self.n_heads, self.d_k, self.cross = d_model, n_heads, d_model // n_heads, cross
        if cross:
            self.w_q = xavier_linear(d_model, d_model)
            self.w_kv = xavier_linear(d_model, 2 * d_model, n_blocks=2)
        else:
            self.w_qkv = xavier_linear(d_model, 3 * d_model, n_blocks=3)
        self.w_o = xavier_linear(d_model, d_model)

    def split_heads(self, x, n):
        """(B, T, n d_model) -> n tensors (B, n_heads, T, d_k)."""
        B, T, _ = x.shape
        return x.view(B, T, n, self.n_heads, self.d_k).permute(2, 0, 3, 1, 4).unbind(0)

    def forward(self, x, mask, memory=None):
        """x (B, T, d_model), mask broadcastable to (B, n_heads, T, T_keys), True = may attend."""
        if self.cross:
            (q,), (k, v) = self.split_heads(self.w_q(x), 1), self.split_heads(self.w_kv(memory), 2)
        else:
            q, k, v = self.split_heads(self.w_qkv(x), 3)
        out = F.scaled_dot_product_attention(q, k, v, attn_mask=mask)   # softmax(q k^T / sqrt(d_k)) v
        B, _, T, _ = out.shape
        return self.w_o(out.transpose(1, 2).reshape(B, T, self.d_model))   # concatenate the heads


class FeedForward(nn.Module):
    """FFN(x) = max(0, x W_1 + b_1) W_2 + b_2 (section 3.3)."""

    def __init__(self, d_model, d_ff):
        super().__init__()
        self.w_1, self.w_2 = xavier_linear(d_model, d_ff), xavier_linear(d_ff, d_model)

    def forward(self, x):
        return self.w_2(F.relu(self.w_1(x)))


class Residual(nn.Module):
    """pre-LN: x + dropout(sublayer(norm(x))); post-LN (2017): norm(x + dropout(sublayer(x)))."""

    def __init__(self, d_model, dropout, norm):
        super().__init__()
        self.norm, self.dropout, self.pre = nn.LayerNorm(d_model), nn.Dropout(dropout), norm == "pre"

    def forward(self, x, sublayer):
        if self.pre:
            return x + self.dropout(sublayer(self.norm(x)))
        return self.norm(x + self.dropout(sublayer(x)))


class EncoderLayer(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.self_attn = MultiHeadAttention(cfg.d_model, cfg.n_heads)
        self.ffn = FeedForward(cfg.d_model, cfg.d_ff)
        self.sublayer = nn.ModuleList([Residual(cfg.d_model, cfg.dropout, cfg.norm) for _ in range(2)])

    def forward(self, x, src_mask):
        x = self.sublayer[0](x, lambda y: self.self_attn(y, src_mask))
        return self.sublayer[1](x, self.ffn)


class DecoderLayer(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.self_attn = MultiHeadAttention(cfg.d_model, cfg.n_heads)
        self.cross_attn = MultiHeadAttention(cfg.d_model, cfg.n_heads, cross=True)
        self.ffn = FeedForward(cfg.d_model, cfg.d_ff)
        self.sublayer = nn.ModuleList([Residual(cfg.d_model, cfg.dropout, cfg.norm) for _ in range(3)])

    def forward(self, x, tgt_mask, memory, src_mask):
        x = self.sublayer[0](x, lambda y: self.self_attn(y, tgt_mask))
        x = self.sublayer[1](x, lambda y: self.cross_attn(y, src_mask, memory))
        return self.sublayer[2](x, self.ffn)


class Stack(nn.Module):
    """N layers, then (pre-LN only) a final LayerNorm: our Encoder and Decoder."""

    def __init__(self, cfg, layer, n):
        super().__init__()
        self.layers = nn.ModuleList([layer(cfg) for _ in range(n)])
        self.norm = nn.LayerNorm(cfg.d_model) if cfg.norm == "pre" else None

    def forward(self, x, *args):
        for layer in self.layers:
            x = layer(x, *args)
        return self.norm(x) if self.norm is not None else x


class Transformer(nn.Module):
    """src (B, S), tgt_in (B, T) -> next-token logits (B, T, vocab), from our ModelConfig."""

    def __init__(self, cfg):
        super().__init__()
        d, V, self.pad_id = cfg.d_model, cfg.vocab_size, cfg.pad_id
        self.src_embed = Embeddings(V, d, cfg.pad_id)
        self.tgt_embed = self.src_embed if cfg.tie_embeddings else Embeddings(V, d, cfg.pad_id)
        self.output = None
        if not cfg.tie_embeddings:
            self.output = nn.Linear(d, V, bias=False)
            nn.init.normal_(self.output.weight, 0.0, d ** -0.5)
        learned = cfg.positions == "learned"
        self.src_pos = PositionalEncoding(d, cfg.max_len, cfg.dropout, learned)
        self.tgt_pos = PositionalEncoding(d, cfg.max_len, cfg.dropout, learned)
        self.encoder = Stack(cfg, EncoderLayer, cfg.n_encoder_layers)
        self.decoder = Stack(cfg, DecoderLayer, cfg.n_decoder_layers)

    def forward(self, src, tgt_in):
        src_mask = (src != self.pad_id)[:, None, None, :]                              # (B, 1, 1, S)
        T = tgt_in.shape[1]
        causal = torch.ones(T, T, dtype=torch.bool, device=tgt_in.device).tril()
        tgt_mask = causal & (tgt_in != self.pad_id)[:, None, None, :]                  # (B, 1, T, T)
        memory = self.encoder(self.src_pos(self.src_embed(src)), src_mask)
        x = self.decoder(self.tgt_pos(self.tgt_embed(tgt_in)), tgt_mask, memory, src_mask)
        return self.output(x) if self.output is not None else F.linear(x, self.tgt_embed.weight)


# ----- the training step of train/loop/step.py -----
def loss_of(model, batch, label_smoothing, device):
    """The label-smoothed cross-entropy, mean over the non-padding target tokens; the ids move to the device here,
    inside the step, as in ours."""
    src, tgt_in, tgt_out = (torch.from_numpy(a).to(device) for a in batch)
    logits = model(src, tgt_in)
    return F.cross_entropy(logits.reshape(-1, logits.shape[-1]), tgt_out.reshape(-1), ignore_index=PAD_ID,
                           label_smoothing=label_smoothing)


class TrainStep:
    """forward + loss, backward, clipping, Adam, schedule; one read of the loss and the norm a step, as ours."""

    def __init__(self, model, preset, device, foreach=None):
        self.model, self.preset, self.device, self.foreach = model.train(), preset, device, foreach
        self.params = list(model.parameters())
        d_model, warmup = preset.model["d_model"], preset.warmup
        factor = noam_factor(preset.lr, d_model, warmup)
        # base lr 1: the schedule's value is the learning rate; LambdaLR's step s is our schedule's step s + 1
        self.optimizer = torch.optim.Adam(self.params, lr=1.0, betas=(0.9, 0.98), eps=1e-9, foreach=foreach)
        self.schedule = torch.optim.lr_scheduler.LambdaLR(
            self.optimizer, lambda s: warmup_lr(s + 1, d_model, warmup, factor))

    def __call__(self, batch, phase=None):
        """One step; phase(name) (optional) is a context manager around each phase (the kernel count's ranges)."""
        phase = phase or (lambda name: contextlib.nullcontext())
        with phase("phase:forward_loss"):
            loss = loss_of(self.model, batch, self.preset.label_smoothing, self.device)
        with phase("phase:zero_grad"):
            self.optimizer.zero_grad(set_to_none=True)
        with phase("phase:backward"):
            loss.backward()
        with phase("phase:clip"):
            norm = nn.utils.clip_grad_norm_(self.params, self.preset.clip_norm, foreach=self.foreach)
        with phase("phase:read"):
            loss, norm = torch.stack([loss.detach(), norm]).tolist()   # waits for the device, as ours each step
        if not (math.isfinite(loss) and math.isfinite(norm)):
            sys.exit(f"torch_reference.py: the loss became {loss} (gradient norm {norm}) during the benchmark")
        with phase("phase:optimizer"):
            self.optimizer.step()
            self.schedule.step()
        return loss


# ----- --host: the host's cost of a step at tiny sizes, as `train bench --host` measures ours -----
def bench_host(preset, device, steps, warmup_steps, seed):
    """{phase: median host ms}, the calls of one step and the loss, at host_mode's sizes."""
    preset = tiny_preset(preset)
    batch = training_batch(*synthetic_batch(HOST_SENTENCES, HOST_SEQ_LEN, HOST_VOCAB, seed))
    torch.manual_seed(seed)
    cfg = model_config("transformer", preset.vocab_size, preset.sizes("transformer"))
    step = TrainStep(Transformer(cfg).to(device), preset, device)
    marks = []

    @contextlib.contextmanager
    def phase(name):
        yield
        if device == "cuda":
            torch.cuda.synchronize()
        marks.append((name, time.perf_counter()))

    for _ in range(warmup_steps):
        step(batch)
    phases = {"forward_loss": [], "backward": [], "update": [], "step": [], "forward_backward": []}
    for _ in range(steps):
        marks.clear()
        start = time.perf_counter()
        loss = step(batch, phase)
        t = dict(marks)
        phases["forward_loss"].append(t["phase:forward_loss"] - start)
        phases["backward"].append(t["phase:backward"] - t["phase:forward_loss"])   # zero_grad and backward
        phases["update"].append(marks[-1][1] - t["phase:backward"])
        phases["step"].append(marks[-1][1] - start)
        phases["forward_backward"].append(t["phase:backward"] - start)
    profile = cProfile.Profile()
    profile.runcall(step, batch)
    return {"implementation": "pytorch eager", "torch": torch.__version__, "preset": preset.name, "device": device,
            "model": preset.model, "steps": steps, "loss": loss, "calls_per_step": pstats.Stats(profile).total_calls,
            "host_ms": {name: 1e3 * statistics.median(times) for name, times in phases.items()}}


# ----- --count-kernels: PyTorch's kernel-making calls of one step -----
NOT_KERNELS = {   # views, metadata, allocation and host-side calls: no kernel on CUDA
    "aten::view", "aten::_unsafe_view", "aten::view_as", "aten::reshape", "aten::_reshape_alias", "aten::as_strided",
    "aten::t", "aten::transpose", "aten::permute", "aten::expand", "aten::expand_as", "aten::unsqueeze",
    "aten::squeeze", "aten::slice", "aten::select", "aten::alias", "aten::detach", "aten::detach_", "aten::unbind",
    "aten::split", "aten::chunk", "aten::narrow", "aten::numpy_T", "aten::lift_fresh", "aten::empty",
    "aten::empty_strided", "aten::empty_like", "aten::resize_", "aten::result_type", "aten::size", "aten::stride",
    "aten::is_nonzero", "aten::item", "aten::_local_scalar_dense", "aten::set_", "aten::contiguous", "aten::to",
    "aten::_to_copy", "aten::clone", "aten::zeros_like", "aten::ones_like", "aten::full_like", "aten::new_empty",
    "aten::new_empty_strided", "aten::_has_compatible_shallow_copy_type", "aten::is_same_size", "aten::flatten",
    "aten::unflatten", "aten::movedim", "aten::diagonal", "aten::real", "aten::resolve_conj", "aten::resolve_neg"}
HOST_READS = {"aten::item", "aten::_local_scalar_dense"}
KERNELS_AS_CUDA = {"aten::dropout": 1, "aten::feature_dropout": 1, "aten::scaled_dot_product_attention": 1,
                   "aten::_scaled_dot_product_flash_attention_for_cpu_backward": 2}
MAX_TENSORS = (110, 64, 48, 36, 30)   # multi_tensor_apply's tensors a launch for 1..5 tensor lists
BLOCKS, CHUNK = 320, 65536            # its blocks a launch, elements a block


def foreach_launches(calls):
    """CUDA launches of one _foreach_* op: multi_tensor_apply's chunking of its tensor lists. calls: for each tensor
    of the lists, the shapes of its call's tensor operands (CPU fallback: one ATen call per tensor; the profiler
    records a tensor list's shape as [], so the lists are read from those calls)."""
    if not calls or all(not shapes for shapes in calls):
        return 0   # 0-d tensors only: Adam's step counters, which live on the host on CUDA
    depth = min(max(len(shapes) for shapes in calls), len(MAX_TENSORS))
    chunks = sum(math.ceil(math.prod(shapes[0]) / CHUNK) for shapes in calls if shapes)
    return max(math.ceil(len(calls) / MAX_TENSORS[depth - 1]), math.ceil(chunks / BLOCKS))


def foreach_calls(event):
    """The argument of foreach_launches for a profiled _foreach_* event (its children, one call per tensor)."""
    return [[s for s in c.input_shapes if isinstance(s, list) and s]
            for c in event.cpu_children if c.name.startswith("aten::")]


def count_kernels(step, batch):
    """Profile one step -> launches by phase, the most frequent ops, and the host reads."""
    from torch.autograd import DeviceType
    from torch.profiler import ProfilerActivity, profile, record_function
    with profile(activities=[ProfilerActivity.CPU], record_shapes=True) as prof:
        step(batch, phase=record_function)
    events = [e for e in prof.events() if e.device_type == DeviceType.CPU]
    phases = [(e.time_range.start, e.time_range.end, e.name[len("phase:"):]) for e in events
              if e.name.startswith("phase:")]

    def phase_of(event):
        return next((name for start, end, name in phases if start <= event.time_range.start <= end), "other")

    def counted_above(event):   # a foreach/dropout/attention ancestor already stands for this call
        parent = event.cpu_parent
        while parent is not None:
            if parent.name in KERNELS_AS_CUDA or parent.name.startswith("aten::_foreach_"):
                return True
            parent = parent.cpu_parent
        return False

    makes_kernel = {}

    def launches_below(event):   # does a call inside event launch a kernel? (then event itself is not a leaf)
        if id(event) not in makes_kernel:
            makes_kernel[id(event)] = any(
                c.name.startswith("aten::") and (c.name not in NOT_KERNELS or launches_below(c))
                for c in event.cpu_children)
        return makes_kernel[id(event)]

    launches, by_op, reads = {}, {}, 0
    for e in events:
        if not e.name.startswith("aten::") or counted_above(e):
            continue
        if e.name in HOST_READS:
            reads += 1
            continue
        if e.name.startswith("aten::_foreach_"):
            n = foreach_launches(foreach_calls(e))
        elif e.name in KERNELS_AS_CUDA:
            n = KERNELS_AS_CUDA[e.name]
        elif e.name in NOT_KERNELS or launches_below(e):
            continue
        else:
            n = 1
        phase = phase_of(e)
        launches[phase] = launches.get(phase, 0) + n
        by_op[e.name] = by_op.get(e.name, 0) + n
    update = {k: launches.get(k, 0) for k in ("zero_grad", "clip", "optimizer")}
    update["total"] = sum(update.values())
    return {"forward_loss": launches.get("forward_loss", 0), "backward": launches.get("backward", 0),
            "update": update, "read": launches.get("read", 0), "other": launches.get("other", 0),
            "total": sum(launches.values()), "host_reads": reads,
            "by_op": dict(sorted(by_op.items(), key=lambda kv: -kv[1])[:25])}


# ----- the benchmark -----
def device_name(device):
    if device == "cuda":
        return torch.cuda.get_device_name()
    try:
        with open("/proc/cpuinfo") as f:
            return next(line.split(":", 1)[1].strip() for line in f if line.startswith("model name"))
    except (OSError, StopIteration):
        return platform.processor() or platform.machine()


def peak_memory(device):
    """(bytes, what they measure): the process's peak RSS on the CPU, the allocator's peak on the GPU."""
    if device == "cuda":
        return torch.cuda.max_memory_allocated(), "torch.cuda.max_memory_allocated"
    kib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return (kib if sys.platform == "darwin" else kib * 1024), "peak RSS of the process"


def graph_saved_bytes(step, batch):
    """Bytes of the distinct storages that forward + loss saves for backward (parameters excluded), seen by
    saved_tensors_hooks on one more untimed step: what `train bench` reports as the graph after forward and loss."""
    params = {p.untyped_storage().data_ptr() for p in step.params}
    seen = {}

    def pack(t):
        storage = t.untyped_storage()
        if storage.data_ptr() not in params:
            seen[storage.data_ptr()] = storage.nbytes()
        return t
    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        loss = loss_of(step.model, batch, step.preset.label_smoothing, step.device)
    del loss   # the graph and the tensors it saved go with the loss: counting them needs no backward
    return sum(seen.values())


def bench(preset, device, batch_size, seq_len, steps, warmup_steps, seed, kernels=False):
    src_ids, tgt_ids = synthetic_batch(batch_size, seq_len, preset.vocab_size, seed)
    batch = training_batch(src_ids, tgt_ids)   # the bench's exact arrays: padded, bos/eos added
    torch.manual_seed(seed)                    # the weights and the dropout masks
    cfg = model_config("transformer", preset.vocab_size, preset.sizes("transformer"))
    model = Transformer(cfg).to(device)
    step = TrainStep(model, preset, device, foreach=True if kernels else None)
    for _ in range(warmup_steps):
        step(batch)
    times, losses = [], []
    for _ in range(steps):
        start = time.perf_counter()
        losses.append(step(batch))
        if device == "cuda":
            torch.cuda.synchronize()
        times.append(time.perf_counter() - start)
    memory, memory_kind = peak_memory(device)
    saved = graph_saved_bytes(step, batch)
    # ours counted after the timing, so that building it does not add to the peak RSS above
    ours = sum(p.numel() for p in build_model(preset, "cpu", seed).parameters())
    target_tokens = int((batch[2] != PAD_ID).sum())
    median = statistics.median(times)
    return {
        "implementation": "pytorch eager", "torch": torch.__version__, "preset": preset.name,
        "device": device, "device_name": device_name(device), "threads": torch.get_num_threads(),
        "parameters": sum(p.numel() for p in model.parameters()), "minitorch_parameters": ours,
        "batch": {"sentences": batch_size, "src_len": int(batch[0].shape[1]), "tgt_len": int(batch[1].shape[1]),
                  "target_tokens": target_tokens, "padding": float((batch[2] == PAD_ID).mean()),
                  "vocab_size": preset.vocab_size, "seed": seed},
        "warmup_steps": warmup_steps, "steps": steps, "step_s": times, "losses": losses,
        "step_s_median": median, "step_s_min": min(times), "tokens_per_s": target_tokens / median,
        "peak_memory_bytes": memory, "peak_memory": memory_kind, "graph_saved_bytes": saved,
    } | ({"kernel_launches": count_kernels(step, batch)} if kernels else {})


def print_result(r):
    b = r["batch"]
    print(f"PyTorch {r['torch']} eager: preset {r['preset']} ({r['parameters']:,} parameters; minitorch's "
          f"model: {r['minitorch_parameters']:,}), {r['device']} ({r['device_name']}), {r['threads']} thread(s)")
    print(f"batch: {b['sentences']} sentences x {b['src_len']} source / {b['tgt_len']} target tokens, "
          f"{b['padding']:.0%} padding, {b['target_tokens']:,} target tokens, vocabulary {b['vocab_size']:,}")
    print(f"{r['steps']} timed steps after {r['warmup_steps']} warm-up (loss {r['losses'][0]:.3f} -> "
          f"{r['losses'][-1]:.3f})")
    for name, value in [("step time, median", f"{r['step_s_median'] * 1e3:,.0f} ms"),
                        ("step time, min", f"{r['step_s_min'] * 1e3:,.0f} ms"),
                        ("target tokens/s", f"{r['tokens_per_s']:,.0f}"),
                        (r["peak_memory"], f"{r['peak_memory_bytes'] / 2**20:,.0f} MB"),
                        ("graph after forward+loss (saved)", f"{r['graph_saved_bytes'] / 2**20:,.0f} MB")]:
        print(f"  {name:<34} {value:>12}")
    if "kernel_launches" in r:
        n, u = r["kernel_launches"], r["kernel_launches"]["update"]
        print(f"kernel launches a step (leaf ATen calls as CUDA launches, foreach Adam and clipping): {n['total']:,} = "
              f"forward+loss {n['forward_loss']:,} + backward {n['backward']:,} + update {u['total']:,} (zero_grad "
              f"{u['zero_grad']:,}, clipping {u['clip']:,}, optimizer {u['optimizer']:,}) + the step's read "
              f"{n['read']:,}" + (f" + outside the phases {n['other']:,}" if n["other"] else "") +
              f"; host reads {n['host_reads']}")
        print("  most frequent: " + ", ".join(f"{k.removeprefix('aten::')} {v}" for k, v in
                                              list(n["by_op"].items())[:12]))


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--preset", required=True, choices=sorted(PRESETS))
    p.add_argument("--device", choices=("cpu", "cuda"), default="cpu")
    p.add_argument("--steps", type=positive_int, default=10, help="timed steps (default 10)")
    p.add_argument("--warmup-steps", type=non_negative_int, default=2, help="untimed steps first (default 2)")
    p.add_argument("--batch-size", type=positive_int,
                   help="sentences a batch (default: the preset's batch tokens / --seq-len, as the bench)")
    p.add_argument("--seq-len", type=positive_int, default=SEQ_LEN,
                   help=f"padded tokens a side, eos/bos included (default {SEQ_LEN})")
    p.add_argument("--seed", type=non_negative_int, default=0, help="seed of the batch, weights and dropout")
    p.add_argument("--threads", type=positive_int, help="torch's intra-op threads (default: torch's choice)")
    p.add_argument("--vocab-size", type=positive_int, help="the model's vocabulary (default: the preset's), as "
                                                           "`train bench --vocab-size`")
    p.add_argument("--json", action="store_true", help="print one JSON object instead of the table")
    p.add_argument("--host", action="store_true",
                   help="time the host's cost of a step at tiny sizes and count its function calls, as "
                        "`python -m train bench --host` does for minitorch")
    p.add_argument("--count-kernels", action="store_true",
                   help="also profile one step and count its kernel-making ATen calls by phase, Adam and clipping "
                        "with foreach=True as on CUDA (see the module's docstring for the rule)")
    args = p.parse_args(argv)
    preset = PRESETS[args.preset]
    if args.vocab_size is not None:
        preset = preset.replace(vocab_size=args.vocab_size)
    if args.device == "cuda" and not torch.cuda.is_available():
        p.error(f"--device cuda: this PyTorch ({torch.__version__}) sees no CUDA GPU")
    if not 2 <= args.seq_len <= preset.model["max_len"]:
        p.error(f"--seq-len {args.seq_len}: needs 2 to {preset.model['max_len']} (the {preset.name} model's max_len)")
    if args.threads:
        torch.set_num_threads(args.threads)
    if args.host:
        result = bench_host(preset, args.device, args.steps, args.warmup_steps, args.seed)
        print(json.dumps(result) if args.json else result)
        return 0
    batch_size = args.batch_size or max(preset.batch_tokens // args.seq_len, 1)
    result = bench(preset, args.device, batch_size, args.seq_len, args.steps, args.warmup_steps, args.seed,
                   args.count_kernels)
    if args.json:
        print(json.dumps(result))
    else:
        print_result(result)
    return 0


if __name__ == "__main__":
    sys.exit(main())
