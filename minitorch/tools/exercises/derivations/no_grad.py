"""no_grad: switch recording off for the block; on the way out put back the mode the block found, in a finally
clause so that an exception cannot leave it off."""
import contextlib

from minitorch.tools.exercises.harness import state
from minitorch.tools.exercises.mutation import instead, pick, step

WORDS = {
    ("previous", "true"): "the block restores True where it found another mode: restore the mode the block found "
                          "(a saved previous value), not True: an inner block ends inside an outer one",
    ("previous", "false"): "the block leaves recording off: it restores False, where it restores the mode the block "
                           "found (a saved previous value)",
    ("previous", "negated"): "the block restores the opposite of the mode it found: restore the mode the block "
                             "found (a saved previous value)",
    ("off", "toggled"): "the block toggles the mode (not state.grad_enabled) where it switches it off: inside "
                        "another no_grad block that turns recording on",
    ("off", "on"): "the block switches recording on where it switches it off",
    ("finally", "no finally"): "restore the mode in a finally: clause, so that an exception inside the block cannot "
                               "leave it off",
    ("finally", "only on exception"): "the mode is restored only when the block raises (in an except: clause): "
                                      "restore it on every exit, in a finally: clause",
    ("finally", "before yield"): "the mode is restored before the block runs (before yield): the block's ops record; "
                                 "restore it after yield, in a finally: clause",
}


@contextlib.contextmanager
def no_grad():
    previous = pick("previous", state.grad_enabled, true=True, false=False, negated=not state.grad_enabled)
    state.grad_enabled = pick("off", False, toggled=not state.grad_enabled, on=True)
    if step("finally"):
        try:
            yield
        finally:
            state.grad_enabled = previous
    elif instead("finally", "no finally"):
        yield
        state.grad_enabled = previous
    elif instead("finally", "only on exception"):
        try:
            yield
        except BaseException:
            state.grad_enabled = previous
            raise
    elif instead("finally", "before yield"):
        state.grad_enabled = previous
        yield
