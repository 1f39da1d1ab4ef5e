"""L-BFGS (Nocedal, 1980; Liu & Nocedal, 1989), in PyTorch's form: step(closure) runs up to max_iter iterations on
the parameters seen as one flat vector, each a two-loop recursion over the last history_size pairs (s, y), a step
of length lr (the first min(1, 1/|g|_1) lr), and PyTorch's stopping tests. Without a line search only, as
torch.optim.LBFGS's default (line_search_fn=None).

Its tests (|g|_inf <= tolerance_grad, y.s > 1e-10, g.d > -tolerance_change, ...) decide on the host each iteration,
as PyTorch's do: it reads a few numbers per iteration, on the GPU too."""
from .. import backend
from ..core.grad_mode import enable_grad
from ..core.versions import increment_version
from .optimizer import Optimizer


class LBFGS(Optimizer):
    """q = -g;  a_i = rho_i s_i.q, q -= a_i y_i (newest first);  r = H q, H = s.y / y.y of the newest pair;
    b_i = rho_i y_i.r, r += (a_i - b_i) s_i (oldest first);  d = r;  p += t d;  rho_i = 1 / y_i.s_i, a pair kept
    only where y.s > 1e-10. State as PyTorch's, on the first parameter: func_evals, n_iter, d, t, old_dirs (the y),
    old_stps (the s), ro, al, H_diag, prev_flat_grad, prev_loss."""

    def __init__(self, params, lr=1, max_iter=20, max_eval=None, tolerance_grad=1e-7, tolerance_change=1e-9,
                 history_size=100, line_search_fn=None):
        if not 0.0 <= lr:
            raise ValueError(f"Invalid learning rate: {lr}")
        if line_search_fn is not None:
            raise NotImplementedError(f"LBFGS: line_search_fn={line_search_fn!r} is not implemented here; "
                                      f"minitorch's LBFGS steps without a line search (line_search_fn=None)")
        if max_eval is None:
            max_eval = max_iter * 5 // 4
        super().__init__(params, lr, max_iter=max_iter, max_eval=max_eval, tolerance_grad=tolerance_grad,
                         tolerance_change=tolerance_change, history_size=history_size, line_search_fn=None)
        if len(self.param_groups) != 1:
            raise ValueError("LBFGS doesn't support per-parameter options (parameter groups)")

    def load_state_dict(self, sd):
        """A state_dict() of an LBFGS over parameters of the same sizes: its options, and its state (flat vectors and
        their history, kept on the first parameter) as saved, moved to the parameters' device."""
        saved = sd["param_groups"]
        if len(saved) != 1 or len(saved[0]["params"]) != len(self.params):
            raise ValueError(f"LBFGS.load_state_dict: the state holds {[len(g['params']) for g in saved]} "
                             f"parameters in its groups, the optimizer one group of {len(self.params)}")
        self.param_groups[0].update((k, v) for k, v in saved[0].items() if k != "params")
        device = self.params[0].device

        def move(v):
            if isinstance(v, (list, tuple)):
                return [move(a) for a in v]
            return backend.to_device(backend.array_of(v), device) if hasattr(v, "shape") else v

        self.state[0].clear()
        self.state[0].update((k, move(v)) for k, v in next(iter(sd["state"].values()), {}).items())

    def _flat_grad(self):
        """Every parameter's gradient as one vector (zeros where a parameter has none)."""
        xp = self._xp
        return xp.concatenate([(xp.zeros(p.data.size, p.data.dtype) if p.grad is None else p.grad.data.ravel())
                               for p in self.params])

    def _add(self, t, d):
        """p += t d, each parameter its slice of d."""
        increment_version(self.params)
        at = 0
        for p in self.params:
            n = p.data.size
            p.data += (t * d[at:at + n]).reshape(p.data.shape)
            at += n

    def step(self, closure):
        """Up to max_iter L-BFGS iterations; closure() recomputes the loss and its gradients (zero_grad, forward,
        backward) and returns the loss. Returns the loss of the first evaluation, as PyTorch's."""
        if closure is None:
            raise RuntimeError("LBFGS.step needs a closure that reevaluates the model and returns the loss")
        group = self.param_groups[0]
        lr, max_iter, max_eval = group["lr"], group["max_iter"], group["max_eval"]
        tolerance_grad, tolerance_change = group["tolerance_grad"], group["tolerance_change"]
        history_size = group["history_size"]
        self._xp = xp = backend.xp_of(self.params[0].data)
        self.step_count += 1
        state = self.state[0]
        state.setdefault("func_evals", 0)
        state.setdefault("n_iter", 0)

        with enable_grad():
            orig_loss = closure()
        loss = float(orig_loss)
        current_evals = 1
        state["func_evals"] += 1
        flat_grad = self._flat_grad()
        if float(xp.abs(flat_grad).max()) <= tolerance_grad:
            return orig_loss

        d, t = state.get("d"), state.get("t")
        old_dirs, old_stps, ro = state.get("old_dirs"), state.get("old_stps"), state.get("ro")
        H_diag, prev_flat_grad, prev_loss = state.get("H_diag"), state.get("prev_flat_grad"), state.get("prev_loss")
        n_iter = 0
        while n_iter < max_iter:
            n_iter += 1
            state["n_iter"] += 1
            if state["n_iter"] == 1:
                d = -flat_grad
                old_dirs, old_stps, ro = [], [], []
                H_diag = 1
            else:
                y = flat_grad - prev_flat_grad
                s = d * t
                ys = y.dot(s)
                if float(ys) > 1e-10:   # keep the pair only where the curvature is positive
                    if len(old_dirs) == history_size:
                        old_dirs.pop(0)
                        old_stps.pop(0)
                        ro.pop(0)
                    old_dirs.append(y)
                    old_stps.append(s)
                    ro.append(1.0 / ys)
                    H_diag = ys / y.dot(y)
                al = state.setdefault("al", [None] * history_size)   # (kept in the state, as PyTorch's)
                q = -flat_grad
                for i in range(len(old_dirs) - 1, -1, -1):
                    al[i] = old_stps[i].dot(q) * ro[i]
                    q = q - al[i] * old_dirs[i]
                d = r = q * H_diag
                for i in range(len(old_dirs)):
                    be_i = old_dirs[i].dot(r) * ro[i]
                    r += (al[i] - be_i) * old_stps[i]
            prev_flat_grad = flat_grad.copy()
            prev_loss = loss
            t = lr
            if state["n_iter"] == 1:   # the first step is at most lr long in the l1 norm of the gradient
                inverse = 1.0 / xp.abs(flat_grad).sum()
                t = (inverse if float(inverse) < 1.0 else 1.0) * lr
            if float(flat_grad.dot(d)) > -tolerance_change:   # not a descent direction
                break

            evals = 0
            self._add(t, d)
            opt_cond = False
            if n_iter != max_iter:
                with enable_grad():
                    loss = float(closure())
                flat_grad = self._flat_grad()
                opt_cond = float(xp.abs(flat_grad).max()) <= tolerance_grad
                evals = 1
            current_evals += evals
            state["func_evals"] += evals
            if n_iter == max_iter or current_evals >= max_eval or opt_cond:
                break
            if float(xp.abs(d * t).max()) <= tolerance_change or abs(loss - prev_loss) < tolerance_change:
                break

        state.update(d=d, t=t, old_dirs=old_dirs, old_stps=old_stps, ro=ro, H_diag=H_diag,
                     prev_flat_grad=prev_flat_grad, prev_loss=prev_loss)
        return orig_loss
