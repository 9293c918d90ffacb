"""The part of torch.export's JSON model schema a worker accepts, as strict msgspec Structs.

It mirrors ``torch/_export/serde/schema.py`` (schema 8.20, torch 2.14) field for field, but
only the members that a decomposed train-mode program of a classification network needs.
Every Struct forbids unknown fields, so what is left out here is refused by decoding alone:
custom objects (``as_custom_obj``, ``custom_obj`` inputs, ``custom_obj_values``), graphs of
higher-order ops (``as_graph``), operators passed as values (``as_operator``), tokens,
gradient outputs, symbolic floats and booleans, a payload's ``use_pickle`` flag, example
inputs. Unions are one-key objects, as the serializer writes them; ``OneOf`` checks that
exactly one member is present. Node metadata must be empty (the hub strips it: stack traces
and module paths are for people, and torch resolves some of them by attribute path) and
``guards_code`` must be empty (``.module()`` would ``exec`` it).
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

import msgspec
from msgspec import UNSET, Meta, UnsetType

from computeshare_desktop.graph import base
from computeshare_desktop.protocol.paths import TensorPath

_IDENT = r"[A-Za-z_][A-Za-z0-9_]*"
Name = Annotated[str, Meta(pattern=rf"\A{_IDENT}\Z", max_length=base.MAX_NAME_CHARS)]
FQN = TensorPath  # a parameter's or buffer's path in the module: the manifest's rule
Text = Annotated[str, Meta(max_length=256, pattern="\\A[^\\ud800-\\udfff]*\\Z")]
Int = Annotated[int, Meta(ge=-(2**63), le=2**63 - 1)]
Float = float | Literal["Infinity", "-Infinity", "NaN"]  # how the serializer spells those
Ints = Annotated[list[Int], Meta(max_length=base.MAX_LIST_ITEMS)]
# real dtypes and bool (schema.ScalarType): BYTE..DOUBLE, BOOL, BFLOAT16; no complex, fp8
ScalarType = Literal[1, 2, 3, 4, 5, 6, 7, 8, 12, 13]
MemoryFormat = Literal[1, 2, 3, 4]  # contiguous, channels last (2d, 3d), preserve
Layout = Literal[7]  # strided only: no sparse, no mkldnn
Empty = Annotated[dict[str, str], Meta(max_length=0)]


class Strict(msgspec.Struct, forbid_unknown_fields=True, frozen=True):
    """A schema dataclass: every field required, no other field allowed."""


class OneOf(Strict, frozen=True):
    """A schema union: an object with exactly one of its members."""

    def __post_init__(self) -> None:
        present = [f for f in self.__struct_fields__ if getattr(self, f) is not UNSET]
        if len(present) != 1:
            raise ValueError(f"{type(self).__name__} needs exactly one member, "
                             f"got {present or 'none'}")

    @property
    def kind(self) -> str:
        """The member present."""
        return next(f for f in self.__struct_fields__ if getattr(self, f) is not UNSET)

    @property
    def value(self) -> Any:
        return getattr(self, self.kind)


class Device(Strict, frozen=True):
    type: Literal["cpu"]  # the hub exports on the CPU; a worker moves the program after
    index: None


class IntOr(OneOf, frozen=True):
    """A union with a plain number among its members (sizes, their hints)."""

    as_int: Int | UnsetType = UNSET


class SymExprHint(IntOr, frozen=True):
    """A size's value at export: a number only (no float or bool hints)."""


class SymExpr(Strict, frozen=True):
    expr_str: Annotated[str, Meta(max_length=base.MAX_EXPR_CHARS)]
    hint: SymExprHint | None


class SymInt(IntOr, frozen=True):
    # an expression goes through symbols.check_expression before sympy sees it
    as_expr: SymExpr | UnsetType = UNSET


class SymIntArgument(IntOr, frozen=True):
    # a size: a name from sym_int_values, or a number
    as_name: Name | UnsetType = UNSET


class TensorMeta(Strict, frozen=True):
    dtype: ScalarType
    sizes: Annotated[list[SymInt], Meta(max_length=base.MAX_DIMS)]
    requires_grad: bool
    device: Device
    strides: Annotated[list[SymInt], Meta(max_length=base.MAX_DIMS)]
    storage_offset: SymInt
    layout: Layout


class TensorArgument(Strict, frozen=True):
    name: Name


class OptionalTensorArgument(OneOf, frozen=True):
    # an element of Tensor?[] (a bias that may be None)
    as_tensor: TensorArgument | UnsetType = UNSET
    as_none: bool | UnsetType = UNSET


class Argument(OneOf, frozen=True):
    as_none: bool | UnsetType = UNSET
    as_tensor: TensorArgument | UnsetType = UNSET
    as_tensors: Annotated[list[TensorArgument],
                          Meta(max_length=base.MAX_LIST_ITEMS)] | UnsetType = UNSET
    as_int: Int | UnsetType = UNSET
    as_ints: Ints | UnsetType = UNSET
    as_float: Float | UnsetType = UNSET
    as_floats: Annotated[list[Float], Meta(max_length=base.MAX_LIST_ITEMS)] | UnsetType = UNSET
    as_string: Text | UnsetType = UNSET
    as_strings: Annotated[list[Text], Meta(max_length=64)] | UnsetType = UNSET
    as_sym_int: SymIntArgument | UnsetType = UNSET
    as_sym_ints: Annotated[list[SymIntArgument],
                           Meta(max_length=base.MAX_LIST_ITEMS)] | UnsetType = UNSET
    as_scalar_type: ScalarType | UnsetType = UNSET
    as_memory_format: MemoryFormat | UnsetType = UNSET
    as_layout: Layout | UnsetType = UNSET
    as_device: Device | UnsetType = UNSET
    as_bool: bool | UnsetType = UNSET
    as_bools: Annotated[list[bool], Meta(max_length=base.MAX_LIST_ITEMS)] | UnsetType = UNSET
    as_optional_tensors: Annotated[list[OptionalTensorArgument],
                                   Meta(max_length=base.MAX_LIST_ITEMS)] | UnsetType = UNSET
    as_optional_tensor: OptionalTensorArgument | UnsetType = UNSET


class NamedArgument(Strict, frozen=True):
    name: Name
    arg: Argument
    kind: Literal[0, 1, 2] | None


class Node(Strict, frozen=True):
    target: Annotated[str, Meta(max_length=base.MAX_NAME_CHARS)]
    inputs: Annotated[list[NamedArgument], Meta(max_length=64)]
    outputs: Annotated[list[Argument], Meta(max_length=64)]
    metadata: Empty
    is_hop_single_tensor_return: None
    name: Name | None


class Graph(Strict, frozen=True):
    inputs: Annotated[list[Argument], Meta(max_length=base.MAX_STATE_TENSORS + 1)]
    outputs: Annotated[list[Argument], Meta(max_length=base.MAX_STATE_TENSORS + 1)]
    nodes: Annotated[list[Node], Meta(max_length=base.MAX_NODES)]
    tensor_values: Annotated[dict[Name, TensorMeta], Meta(max_length=base.MAX_TENSORS)]
    sym_int_values: Annotated[dict[Name, SymInt], Meta(max_length=base.MAX_TENSORS)]
    sym_bool_values: Empty
    is_single_tensor_return: Literal[False]
    custom_obj_values: Empty
    sym_float_values: Empty


class UserInputSpec(Strict, frozen=True):
    arg: Argument  # the batch: checks.py wants exactly one, a tensor


class InputToParameterSpec(Strict, frozen=True):
    """A parameter: the loader makes it an nn.Parameter (trainable or frozen)."""

    arg: TensorArgument
    parameter_name: FQN


class InputToBufferSpec(Strict, frozen=True):
    """A buffer (running statistics); non-persistent ones go with the constants."""

    arg: TensorArgument
    buffer_name: FQN
    persistent: bool


class InputToTensorConstantSpec(Strict, frozen=True):
    arg: TensorArgument
    tensor_constant_name: FQN  # a tensor made in forward, lifted out by export


class InputSpec(OneOf, frozen=True):
    # left out: custom_obj (pickled script objects), token, constant_input
    user_input: UserInputSpec | UnsetType = UNSET
    parameter: InputToParameterSpec | UnsetType = UNSET
    buffer: InputToBufferSpec | UnsetType = UNSET
    tensor_constant: InputToTensorConstantSpec | UnsetType = UNSET


class UserOutputSpec(Strict, frozen=True):
    arg: Argument  # the logits


class BufferMutationSpec(Strict, frozen=True):
    """A buffer's new value (BatchNorm's statistics), written back after each forward."""

    arg: TensorArgument
    buffer_name: FQN


class OutputSpec(OneOf, frozen=True):
    # left out: loss_output, gradient_to_*, user_input_mutation, token, parameter_mutation
    user_output: UserOutputSpec | UnsetType = UNSET
    buffer_mutation: BufferMutationSpec | UnsetType = UNSET


class GraphSignature(Strict, frozen=True):
    input_specs: Annotated[list[InputSpec], Meta(max_length=base.MAX_STATE_TENSORS + 1)]
    output_specs: Annotated[list[OutputSpec], Meta(max_length=base.MAX_STATE_TENSORS + 1)]


class RangeConstraint(Strict, frozen=True):
    min_val: Int | None
    max_val: Int | None


class ModuleCallSignature(Strict, frozen=True):
    inputs: Annotated[list[Argument], Meta(max_length=0)]
    outputs: Annotated[list[Argument], Meta(max_length=0)]
    in_spec: Annotated[str, Meta(max_length=1024)]  # checked against the one form we send
    out_spec: Annotated[str, Meta(max_length=1024)]
    forward_arg_names: Annotated[list[Name], Meta(max_length=1)]


class ModuleCallEntry(Strict, frozen=True):
    fqn: Literal[""]  # the root only: the hub drops the submodules' entries
    signature: ModuleCallSignature


class GraphModule(Strict, frozen=True):
    graph: Graph
    signature: GraphSignature
    module_call_graph: Annotated[list[ModuleCallEntry], Meta(min_length=1, max_length=1)]
    metadata: Empty
    treespec_namedtuple_fields: Empty


class SchemaVersion(Strict, frozen=True):
    major: Int
    minor: Int


class ExportedProgram(Strict, frozen=True):
    graph_module: GraphModule
    opset_version: Annotated[dict[Annotated[str, Meta(max_length=16)], Int],
                             Meta(max_length=4)]
    range_constraints: Annotated[dict[Annotated[str, Meta(pattern=r"\As[0-9]{1,9}\Z")],
                                      RangeConstraint], Meta(max_length=64)]
    schema_version: SchemaVersion
    verifiers: Annotated[list[Literal["ATEN"]], Meta(max_length=1)]
    torch_version: Annotated[str, Meta(max_length=64)]
    guards_code: Annotated[list[str], Meta(max_length=0)]


class VersionOnly(msgspec.Struct):
    """The one field read before the strict decoding: a version mismatch is its own error."""

    torch_version: Annotated[str, Meta(max_length=64)] = ""
