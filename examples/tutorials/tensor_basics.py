"""The first steps of a PyTorch course, as a new user types them: pick a device, make tensors, let NumPy and the
tensor share memory, mix dtypes and see what they promote to, write results into a given tensor with out=, change
one element in place, then save a small model's state dict to model.pth and load it into a fresh model.

Runs unchanged under `import minitorch as torch`; with `import torch` it prints the same numbers.
"""
import os
import tempfile

import numpy as np

import minitorch as torch
from minitorch import nn

device = torch.accelerator.current_accelerator().type if torch.accelerator.is_available() else "cpu"
if torch.backends.mps.is_available():
    device = "mps"
# (printed without the device's name, so that a machine with a GPU prints what one without prints)
ones = torch.ones(2, 3, device=device)
print("ones on the chosen device:", ones.sum().item())

# NumPy and a CPU tensor share their memory: a change to one shows in the other
t = torch.ones(4)
n = t.numpy()
t.add_(1)
print("numpy sees the tensor's add_:", n.tolist())
a = np.zeros(3)
b = torch.from_numpy(a)
np.add(a, 5, out=a)
print("the tensor sees numpy's add:", b.tolist())

# type promotion: the result's dtype (its bits: 64, 32; bool prints none)
ints = torch.tensor([1, 2, 3])
floats = torch.tensor([0.5, 1.5, 2.5])
print("int * 2.5 ->", (ints * 2.5).tolist(), str((ints * 2.5).dtype)[-2:])
print("int / int ->", (ints / torch.tensor([2, 2, 2])).tolist(), str((ints / ints).dtype)[-2:])
print("float ** int tensor ->", (floats ** ints).tolist(), str((floats ** ints).dtype)[-2:])
print("int < 1.5 ->", (ints < 1.5).tolist())
print("result_type(int tensor, 1.0) ->", str(torch.result_type(ints, 1.0))[-2:])

# out= writes the result into a tensor you made
m = torch.tensor([[1.0, 2.0], [3.0, 4.0]])
result = torch.empty(2, 2)
torch.matmul(m, m, out=result)
print("matmul into out:", result.tolist(), "the method:", m.matmul(m).sum().item())
torch.exp(torch.zeros(2), out=result[0])
print("exp into a row of it:", result.tolist())

# one element, in place
vec = torch.zeros(4)
vec[1] += 1
vec[3] += 2
print("after vec[i] += ...:", vec.tolist())

# a model's state dict saved and loaded as the tutorials do
model = nn.Sequential(nn.Linear(3, 2), nn.ReLU(), nn.Linear(2, 1))
with torch.no_grad():
    for i, param in enumerate(model.parameters()):
        param.copy_(torch.from_numpy(np.linspace(-1, 1, param.numel()).reshape(tuple(param.shape)) * (i + 1))
                    .float())
print("first parameter's shape:", tuple(next(model.parameters()).shape))
x = torch.tensor([[1.0, 2.0, 3.0], [-1.0, 0.5, 2.0]])
with tempfile.TemporaryDirectory() as folder:
    path = os.path.join(folder, "model.pth")
    torch.save(model.state_dict(), path)
    fresh = nn.Sequential(nn.Linear(3, 2), nn.ReLU(), nn.Linear(2, 1))
    fresh.load_state_dict(torch.load(path, weights_only=True))
    fresh.eval()
    with torch.no_grad():
        print("the loaded model's output:", [round(v, 4) for v in fresh(x).flatten().tolist()],
              "the same as the saved one's:", torch.allclose(fresh(x), model(x)))
