"""The commands of `python3 -m train`: fit, evaluate, translate, plot, bench, experiment and check-gpu; each module has
add_arguments(parser) and main(args) -> exit status."""
