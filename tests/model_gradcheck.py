"""A finite-difference check of every parameter of a whole model, shared by the model tests."""
import minitorch as mt


def finite_difference_check(model, loss_fn, rng, per_parameter=3, eps=1e-6):
    """Every parameter tensor, a few random entries each: backward's gradient against central differences.

    loss_fn() -> a scalar Tensor computed by the model (float64). Returns the number of entries checked.
    """
    loss = loss_fn()
    model.zero_grad()
    loss.backward()
    checked = 0
    for name, p in model.named_parameters():
        flat = p.data.reshape(-1)
        for j in rng.choice(flat.size, size=min(per_parameter, flat.size), replace=False):
            original = flat[j]
            flat[j] = original + eps
            with mt.no_grad():
                up = loss_fn().item()
            flat[j] = original - eps
            with mt.no_grad():
                down = loss_fn().item()
            flat[j] = original
            numeric = (up - down) / (2 * eps)
            analytic = p.grad.numpy().reshape(-1)[j] if p.grad is not None else 0.0
            assert abs(analytic - numeric) <= 1e-7 + 1e-5 * abs(numeric), (name, j, analytic, numeric)
            checked += 1
    return checked
