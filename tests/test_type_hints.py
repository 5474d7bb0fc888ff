"""The public engine API carries type hints (issue 13): every parameter but self/*args/**kwargs, and the return."""

import inspect

import pytest

from tinytorch.core import autograd, function, gradcheck, tensor

PUBLIC = [
    tensor.Tensor.sum,
    tensor.Tensor.mean,
    tensor.Tensor.reshape,
    tensor.Tensor.transpose,
    tensor.Tensor.numpy,
    tensor.Tensor.item,
    function.Function.apply,
    function.attach,
    function.is_grad_enabled,
    autograd.backward,
    autograd.grad,
    autograd.enable_autograd,
    autograd.topological_order,
    autograd.run_backward,
    autograd.detach,
    autograd.retain_grad,
    gradcheck.check_backward,
    gradcheck.gradcheck,
    gradcheck.numerical_grad,
]


@pytest.mark.parametrize("api", PUBLIC, ids=lambda f: f.__qualname__)
def test_public_function_has_a_return_hint(api):
    assert inspect.signature(api).return_annotation is not inspect.Signature.empty


@pytest.mark.parametrize("api", [autograd.backward, autograd.grad, gradcheck.check_backward, function.attach])
def test_central_functions_hint_the_parameters_a_caller_chooses(api):
    for name, parameter in inspect.signature(api).parameters.items():
        if name in ("self", "forward", "fn") or parameter.kind in (parameter.VAR_POSITIONAL, parameter.VAR_KEYWORD):
            continue
        assert parameter.annotation is not inspect.Parameter.empty, f"{api.__qualname__}({name})"
