"""nn.RNN, nn.LSTM and nn.GRU with PyTorch's interface: (T, B, input_size) in (or batch_first (B, T, ...), or
unbatched (T, ...)), num_layers, bidirectional, dropout between layers, an initial state, and PyTorch's parameter
names and shapes (weight_ih_l0 (G H, input_size), weight_hh_l0 (G H, H), bias_ih_l0, bias_hh_l0, ..._reverse), so
that weights copied from torch.nn give the same outputs; nn.RNNCell, nn.LSTMCell and nn.GRUCell, one step of each.
RNN steps are act([x_t; h] [W_ih; W_hh]^T + b_ih + b_hh); LSTM steps through F.lstm_cell, the fused cell; GRU is
composed from primitives. One Python loop over time; each step's input projection and recurrent projection are one
matmul over [x_t; h] (the two weights joined once per forward)."""
import math

from .. import functional as F
from ..factories import zeros
from ..functions import cat, stack
from . import init
from .module import Module, Parameter


def add_weights(module, suffix, rows, input_size, hidden_size, bias, dtype):
    """weight_ih (rows, input_size), weight_hh (rows, hidden_size) and, with bias, bias_ih, bias_hh (rows,), each
    name + suffix, from U(-1/sqrt(H), 1/sqrt(H)) as PyTorch's, in PyTorch's order (that of named_parameters)."""
    bound = 1.0 / math.sqrt(hidden_size)
    shapes = [("weight_ih", (rows, input_size)), ("weight_hh", (rows, hidden_size))]
    if bias:
        shapes += [("bias_ih", (rows,)), ("bias_hh", (rows,))]
    for name, shape in shapes:
        setattr(module, name + suffix, Parameter(init.uniform_(zeros(shape, dtype=dtype), -bound, bound)))


ACTIVATIONS = {"tanh": F.tanh, "relu": F.relu}


def _activation(who, nonlinearity):
    if nonlinearity not in ACTIVATIONS:
        raise ValueError(f"{who}: Unknown nonlinearity '{nonlinearity}'. Select from 'tanh' or 'relu'.")
    return ACTIVATIONS[nonlinearity]


class RNNBase(Module):
    """The layers, directions, parameters and the loop; a subclass gives GATES and step()."""

    GATES = 1

    def __init__(self, input_size, hidden_size, num_layers=1, bias=True, batch_first=False, dropout=0.0,
                 bidirectional=False, dtype=None):
        super().__init__()
        if not isinstance(num_layers, int) or num_layers < 1:
            raise ValueError(f"{type(self).__name__}: num_layers must be a positive int, got {num_layers!r}")
        if not 0 <= dropout <= 1:
            raise ValueError(f"{type(self).__name__}: dropout must be in [0, 1], got {dropout!r}")
        self.input_size, self.hidden_size, self.num_layers = input_size, hidden_size, num_layers
        self.bias, self.batch_first, self.dropout, self.bidirectional = bias, batch_first, dropout, bidirectional
        for layer in range(num_layers):
            for suffix in self._suffixes(layer):
                size = input_size if layer == 0 else hidden_size * self.directions
                add_weights(self, suffix, self.GATES * hidden_size, size, hidden_size, bias, dtype)

    def extra_repr(self):   # PyTorch's: the options that differ from the defaults
        s = f"{self.input_size}, {self.hidden_size}"
        for name, default in (("num_layers", 1), ("bias", True), ("batch_first", False), ("dropout", 0.0),
                              ("bidirectional", False)):
            if getattr(self, name) != default:
                s += f", {name}={getattr(self, name)}"
        return s

    @property
    def directions(self):
        return 2 if self.bidirectional else 1

    def _suffixes(self, layer):
        return [f"_l{layer}"] + ([f"_l{layer}_reverse"] if self.bidirectional else [])

    def _weights(self, suffix):
        w_ih, w_hh = getattr(self, "weight_ih" + suffix), getattr(self, "weight_hh" + suffix)
        b_ih = getattr(self, "bias_ih" + suffix) if self.bias else None
        b_hh = getattr(self, "bias_hh" + suffix) if self.bias else None
        return w_ih, w_hh, b_ih, b_hh

    def forward(self, input, hx=None):
        """input (T, B, input_size) (batch_first: (B, T, ...); unbatched: (T, input_size)) -> (output (T, B, D H),
        the final state), D = 2 if bidirectional; the state as PyTorch's (LSTM: (h_n, c_n), GRU: h_n), each
        (D num_layers, B, H)."""
        unbatched = input.ndim == 2
        if input.ndim not in (2, 3):
            raise ValueError(f"{type(self).__name__}: expected input of 2 or 3 dims, got shape {input.shape}")
        if input.shape[-1] != self.input_size:
            raise ValueError(f"{type(self).__name__}: input.size(-1) must be equal to input_size. Expected "
                             f"{self.input_size}, got {input.shape[-1]}")
        if unbatched:
            input = input.unsqueeze(1)
            hx = None if hx is None else self._map_state(hx, lambda t: t.unsqueeze(1))
        elif self.batch_first:
            input = input.transpose(0, 1)
        T, B = input.shape[0], input.shape[1]
        states = self._initial_states(hx, B, input)
        xs = [input[t] for t in range(T)]
        finals = []
        for layer in range(self.num_layers):
            outs = []
            for d, suffix in enumerate(self._suffixes(layer)):
                ys, final = self._run(xs, states[layer * self.directions + d], self._weights(suffix), reverse=d == 1)
                outs.append(ys)
                finals.append(final)
            xs = outs[0] if len(outs) == 1 else [cat([a, b], dim=-1) for a, b in zip(*outs)]
            if self.dropout and self.training and layer < self.num_layers - 1:
                xs = [F.dropout(x, self.dropout, True) for x in xs]
        output = stack(xs, dim=0)
        state = self._stack_state(finals)
        if unbatched:
            return output.squeeze(1), self._map_state(state, lambda t: t.squeeze(1))
        return (output.transpose(0, 1) if self.batch_first else output), state

    def _run(self, xs, state, weights, reverse):
        """One layer, one direction over the steps xs: (outputs in input order, final state)."""
        w_ih, w_hh, b_ih, b_hh = weights
        joined = self._joined(w_ih, w_hh)
        joined_t = None if joined is None else joined.T   # one transpose per forward, not one per step
        bias = self._joined_bias(b_ih, b_hh)
        ys = [None] * len(xs)
        for t in (reversed(range(len(xs))) if reverse else range(len(xs))):
            state = self.step(xs[t], state, joined_t, bias, weights)
            ys[t] = self._output(state)
        return ys, state

    def _joined(self, w_ih, w_hh):
        return cat([w_ih, w_hh], dim=1)

    def _joined_bias(self, b_ih, b_hh):
        return None if b_ih is None else b_ih + b_hh

    # the state as one tensor (RNN, GRU); LSTM's is the pair (h, c)
    @staticmethod
    def _output(state):
        return state

    @staticmethod
    def _map_state(state, f):
        return f(state)

    @staticmethod
    def _stack_state(finals):
        return stack(finals, dim=0)


class RNN(RNNBase):
    """h_t = act(x_t W_ih^T + b_ih + h_{t-1} W_hh^T + b_hh), act tanh or relu (nonlinearity); the state h_n
    (D num_layers, B, H)."""

    def __init__(self, input_size, hidden_size, num_layers=1, nonlinearity="tanh", bias=True, batch_first=False,
                 dropout=0.0, bidirectional=False, dtype=None):
        act = _activation("RNN", nonlinearity)
        super().__init__(input_size, hidden_size, num_layers, bias, batch_first, dropout, bidirectional, dtype)
        self.nonlinearity, self.act = nonlinearity, act

    def _initial_states(self, hx, B, like):
        n = self.num_layers * self.directions
        if hx is None:
            return [zeros(B, self.hidden_size, dtype=like.dtype, device=like.device)] * n
        if hx.shape != (n, B, self.hidden_size):
            raise RuntimeError(f"RNN: Expected hidden size {(n, B, self.hidden_size)}, got {list(hx.shape)}")
        return [hx[k] for k in range(n)]

    def step(self, x, h, joined_t, bias, weights):
        pre = cat([x, h], dim=-1) @ joined_t
        return self.act(pre if bias is None else pre + bias)



class RNNCellBase(Module):
    """One step, as PyTorch's RNNCell, LSTMCell and GRUCell: the parameters weight_ih (G H, input_size), weight_hh
    (G H, H), bias_ih, bias_hh (G H,), the checks, a missing state as zeros, and the unbatched form (input
    (input_size,), states (H,)); a subclass gives GATES, STATES (how many state tensors) and cell() on (B, ...)."""

    GATES, STATES = 1, 1

    def __init__(self, input_size, hidden_size, bias=True, dtype=None):
        super().__init__()
        self.input_size, self.hidden_size, self.bias = input_size, hidden_size, bias
        add_weights(self, "", self.GATES * hidden_size, input_size, hidden_size, bias, dtype)

    def _products(self, x, h):
        """(x W_ih^T + b_ih, h W_hh^T + b_hh), each (B, G H)."""
        b_ih, b_hh = (self.bias_ih, self.bias_hh) if self.bias else (None, None)
        return F.linear(x, self.weight_ih, b_ih), F.linear(h, self.weight_hh, b_hh)

    def forward(self, input, hx=None):
        """input (B, input_size) or (input_size,); hx the state(s) (B, H) or (H,), zeros when None -> the new state(s)
        of the same shape (LSTMCell: (h, c); the others: h)."""
        who = type(self).__name__
        if input.ndim not in (1, 2):
            raise ValueError(f"{who}: Expected input to be 1D or 2D, got {input.ndim}D instead")
        if input.shape[-1] != self.input_size:
            raise RuntimeError(f"{who}: input has inconsistent input_size: got {input.shape[-1]} expected "
                               f"{self.input_size}")
        shape = (*input.shape[:-1], self.hidden_size)
        if hx is None:
            states = [zeros(shape, dtype=input.dtype, device=input.device)] * self.STATES
        else:
            states = list(hx) if self.STATES > 1 else [hx]
        for k, state in enumerate(states):
            name = f"hx[{k}]" if self.STATES > 1 else "hidden"
            if state.ndim not in (1, 2):
                raise ValueError(f"{who}: Expected {name} to be 1D or 2D, got {state.ndim}D instead")
            if state.shape != shape:
                raise RuntimeError(f"{who}: Expected {name} of size {shape} for input of size {input.shape}, got "
                                   f"{state.shape}")
        if input.ndim == 2:
            return self.cell(input, *states)
        out = self.cell(input.unsqueeze(0), *(state.unsqueeze(0) for state in states))
        return tuple(t.squeeze(0) for t in out) if self.STATES > 1 else out.squeeze(0)

    def extra_repr(self):   # PyTorch's
        return f"{self.input_size}, {self.hidden_size}" + (f", bias={self.bias}" if self.bias is not True else "")


class RNNCell(RNNCellBase):
    """h' = act(x W_ih^T + b_ih + h W_hh^T + b_hh), act tanh or relu. An unknown nonlinearity is refused here
    (PyTorch refuses it at the first call)."""

    def __init__(self, input_size, hidden_size, bias=True, nonlinearity="tanh", dtype=None):
        act = _activation("RNNCell", nonlinearity)
        super().__init__(input_size, hidden_size, bias, dtype)
        self.act, self.nonlinearity = act, nonlinearity

    def cell(self, x, h):
        gi, gh = self._products(x, h)
        return self.act(gi + gh)

    def extra_repr(self):
        return super().extra_repr() + (f", nonlinearity={self.nonlinearity}" if self.nonlinearity != "tanh" else "")


class LSTMCell(RNNCellBase):
    """One LSTM step, hx = (h, c) -> (h', c'): the gates i, f, g, o of x W_ih^T + b_ih + h W_hh^T + b_hh through
    F.lstm_cell, as LSTM's."""

    GATES, STATES = 4, 2

    def cell(self, x, h, c):
        gi, gh = self._products(x, h)
        return F.lstm_cell(gi + gh, c)


class GRUCell(RNNCellBase):
    """One GRU step, h -> h', as GRU's (gru_step)."""

    GATES = 3

    def cell(self, x, h):
        return gru_step(*self._products(x, h), h)


def gru_step(gi, gh, h):
    """r, z = sigmoid(gi_{r,z} + gh_{r,z}); n = tanh(gi_n + r gh_n); h' = (1 - z) n + z h; gi, gh (B, 3H)."""
    H = h.shape[-1]
    r = (gi[..., :H] + gh[..., :H]).sigmoid()
    z = (gi[..., H:2 * H] + gh[..., H:2 * H]).sigmoid()
    n = (gi[..., 2 * H:] + r * gh[..., 2 * H:]).tanh()
    return (1 - z) * n + z * h


class LSTM(RNNBase):
    """i, f, g, o = sigmoid, sigmoid, tanh, sigmoid of x W_ih^T + b_ih + h W_hh^T + b_hh (gates in that order, as
    PyTorch's); c = f c + i g; h = o tanh(c), through F.lstm_cell."""

    GATES = 4

    def _initial_states(self, hx, B, like):
        n = self.num_layers * self.directions
        if hx is None:
            z = zeros(B, self.hidden_size, dtype=like.dtype, device=like.device)
            return [(z, z)] * n
        h0, c0 = hx
        for name, t in (("h0", h0), ("c0", c0)):
            if t.shape != (n, B, self.hidden_size):
                raise RuntimeError(f"LSTM: expected {name} of size {(n, B, self.hidden_size)}, got {t.shape}")
        return [(h0[k], c0[k]) for k in range(n)]

    def step(self, x, state, joined_t, bias, weights):
        h, c = state
        gates = cat([x, h], dim=-1) @ joined_t
        if bias is not None:
            gates = gates + bias
        return F.lstm_cell(gates, c)

    @staticmethod
    def _output(state):
        return state[0]

    @staticmethod
    def _map_state(state, f):
        return f(state[0]), f(state[1])

    @staticmethod
    def _stack_state(finals):
        return stack([h for h, _ in finals], dim=0), stack([c for _, c in finals], dim=0)


class GRU(RNNBase):
    """r, z = sigmoid(x W_i{r,z}^T + b_i{r,z} + h W_h{r,z}^T + b_h{r,z}); n = tanh(x W_in^T + b_in + r (h W_hn^T +
    b_hn)); h = (1 - z) n + z h (gates r, z, n, as PyTorch's). The input and recurrent products stay apart: r
    multiplies only the recurrent part of n."""

    GATES = 3

    def _initial_states(self, hx, B, like):
        n = self.num_layers * self.directions
        if hx is None:
            return [zeros(B, self.hidden_size, dtype=like.dtype, device=like.device)] * n
        if hx.shape != (n, B, self.hidden_size):
            raise RuntimeError(f"GRU: expected h0 of size {(n, B, self.hidden_size)}, got {hx.shape}")
        return [hx[k] for k in range(n)]

    def _joined(self, w_ih, w_hh):
        return None   # the products stay apart

    def _joined_bias(self, b_ih, b_hh):
        return None

    def step(self, x, h, joined_t, bias, weights):
        w_ih, w_hh, b_ih, b_hh = weights
        return gru_step(F.linear(x, w_ih, b_ih), F.linear(h, w_hh, b_hh), h)

