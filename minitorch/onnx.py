"""torch.onnx's place: present, so that `import torch.onnx` in a training script works under `import minitorch as
torch`; exporting a model is refused with what to do instead (minitorch has no ONNX exporter)."""


def export(model, args=None, f=None, *rest, **options):
    """Refused: minitorch cannot write an ONNX graph (torch.onnx.export)."""
    raise NotImplementedError("minitorch.onnx.export: minitorch has no ONNX exporter; save the weights with "
                              "mt.save(model.state_dict(), path) (a NumPy .npz), load them into the same model "
                              "written in PyTorch (numpy.load, torch.from_numpy) and call torch.onnx.export there")


def is_in_onnx_export():
    """False: minitorch never exports (torch.onnx.is_in_onnx_export)."""
    return False
