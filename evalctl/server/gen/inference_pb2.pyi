from google.protobuf.internal import containers as _containers
from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class Role(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    ROLE_UNSPECIFIED: _ClassVar[Role]
    ROLE_SYSTEM: _ClassVar[Role]
    ROLE_USER: _ClassVar[Role]
    ROLE_ASSISTANT: _ClassVar[Role]
    ROLE_TOOL: _ClassVar[Role]

class StopReason(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    STOP_REASON_UNSPECIFIED: _ClassVar[StopReason]
    STOP_REASON_END_TURN: _ClassVar[StopReason]
    STOP_REASON_TOOL_USE: _ClassVar[StopReason]
    STOP_REASON_MAX_TOKENS: _ClassVar[StopReason]
    STOP_REASON_TIMEOUT: _ClassVar[StopReason]
    STOP_REASON_REPETITION: _ClassVar[StopReason]
ROLE_UNSPECIFIED: Role
ROLE_SYSTEM: Role
ROLE_USER: Role
ROLE_ASSISTANT: Role
ROLE_TOOL: Role
STOP_REASON_UNSPECIFIED: StopReason
STOP_REASON_END_TURN: StopReason
STOP_REASON_TOOL_USE: StopReason
STOP_REASON_MAX_TOKENS: StopReason
STOP_REASON_TIMEOUT: StopReason
STOP_REASON_REPETITION: StopReason

class ToolDef(_message.Message):
    __slots__ = ("name", "description", "parameters_json")
    NAME_FIELD_NUMBER: _ClassVar[int]
    DESCRIPTION_FIELD_NUMBER: _ClassVar[int]
    PARAMETERS_JSON_FIELD_NUMBER: _ClassVar[int]
    name: str
    description: str
    parameters_json: str
    def __init__(self, name: _Optional[str] = ..., description: _Optional[str] = ..., parameters_json: _Optional[str] = ...) -> None: ...

class ToolCall(_message.Message):
    __slots__ = ("id", "name", "arguments_json")
    ID_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    ARGUMENTS_JSON_FIELD_NUMBER: _ClassVar[int]
    id: str
    name: str
    arguments_json: str
    def __init__(self, id: _Optional[str] = ..., name: _Optional[str] = ..., arguments_json: _Optional[str] = ...) -> None: ...

class Message(_message.Message):
    __slots__ = ("role", "content", "tool_calls", "tool_call_id", "name", "is_error")
    ROLE_FIELD_NUMBER: _ClassVar[int]
    CONTENT_FIELD_NUMBER: _ClassVar[int]
    TOOL_CALLS_FIELD_NUMBER: _ClassVar[int]
    TOOL_CALL_ID_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    IS_ERROR_FIELD_NUMBER: _ClassVar[int]
    role: Role
    content: str
    tool_calls: _containers.RepeatedCompositeFieldContainer[ToolCall]
    tool_call_id: str
    name: str
    is_error: bool
    def __init__(self, role: _Optional[_Union[Role, str]] = ..., content: _Optional[str] = ..., tool_calls: _Optional[_Iterable[_Union[ToolCall, _Mapping]]] = ..., tool_call_id: _Optional[str] = ..., name: _Optional[str] = ..., is_error: _Optional[bool] = ...) -> None: ...

class CompleteRequest(_message.Message):
    __slots__ = ("messages", "tools", "tool_choice", "json_schema", "temperature", "max_tokens", "seed", "timeout_s", "tag", "allow_repetition", "top_p")
    MESSAGES_FIELD_NUMBER: _ClassVar[int]
    TOOLS_FIELD_NUMBER: _ClassVar[int]
    TOOL_CHOICE_FIELD_NUMBER: _ClassVar[int]
    JSON_SCHEMA_FIELD_NUMBER: _ClassVar[int]
    TEMPERATURE_FIELD_NUMBER: _ClassVar[int]
    MAX_TOKENS_FIELD_NUMBER: _ClassVar[int]
    SEED_FIELD_NUMBER: _ClassVar[int]
    TIMEOUT_S_FIELD_NUMBER: _ClassVar[int]
    TAG_FIELD_NUMBER: _ClassVar[int]
    ALLOW_REPETITION_FIELD_NUMBER: _ClassVar[int]
    TOP_P_FIELD_NUMBER: _ClassVar[int]
    messages: _containers.RepeatedCompositeFieldContainer[Message]
    tools: _containers.RepeatedCompositeFieldContainer[ToolDef]
    tool_choice: str
    json_schema: str
    temperature: float
    max_tokens: int
    seed: int
    timeout_s: float
    tag: str
    allow_repetition: bool
    top_p: float
    def __init__(self, messages: _Optional[_Iterable[_Union[Message, _Mapping]]] = ..., tools: _Optional[_Iterable[_Union[ToolDef, _Mapping]]] = ..., tool_choice: _Optional[str] = ..., json_schema: _Optional[str] = ..., temperature: _Optional[float] = ..., max_tokens: _Optional[int] = ..., seed: _Optional[int] = ..., timeout_s: _Optional[float] = ..., tag: _Optional[str] = ..., allow_repetition: _Optional[bool] = ..., top_p: _Optional[float] = ...) -> None: ...

class Usage(_message.Message):
    __slots__ = ("input_tokens", "output_tokens", "cached_input_tokens")
    INPUT_TOKENS_FIELD_NUMBER: _ClassVar[int]
    OUTPUT_TOKENS_FIELD_NUMBER: _ClassVar[int]
    CACHED_INPUT_TOKENS_FIELD_NUMBER: _ClassVar[int]
    input_tokens: int
    output_tokens: int
    cached_input_tokens: int
    def __init__(self, input_tokens: _Optional[int] = ..., output_tokens: _Optional[int] = ..., cached_input_tokens: _Optional[int] = ...) -> None: ...

class Timings(_message.Message):
    __slots__ = ("ttft_ms", "total_ms", "tokens_per_s", "queue_ms")
    TTFT_MS_FIELD_NUMBER: _ClassVar[int]
    TOTAL_MS_FIELD_NUMBER: _ClassVar[int]
    TOKENS_PER_S_FIELD_NUMBER: _ClassVar[int]
    QUEUE_MS_FIELD_NUMBER: _ClassVar[int]
    ttft_ms: float
    total_ms: float
    tokens_per_s: float
    queue_ms: float
    def __init__(self, ttft_ms: _Optional[float] = ..., total_ms: _Optional[float] = ..., tokens_per_s: _Optional[float] = ..., queue_ms: _Optional[float] = ...) -> None: ...

class CompleteResponse(_message.Message):
    __slots__ = ("content", "tool_calls", "stop_reason", "usage", "timings", "model")
    CONTENT_FIELD_NUMBER: _ClassVar[int]
    TOOL_CALLS_FIELD_NUMBER: _ClassVar[int]
    STOP_REASON_FIELD_NUMBER: _ClassVar[int]
    USAGE_FIELD_NUMBER: _ClassVar[int]
    TIMINGS_FIELD_NUMBER: _ClassVar[int]
    MODEL_FIELD_NUMBER: _ClassVar[int]
    content: str
    tool_calls: _containers.RepeatedCompositeFieldContainer[ToolCall]
    stop_reason: StopReason
    usage: Usage
    timings: Timings
    model: str
    def __init__(self, content: _Optional[str] = ..., tool_calls: _Optional[_Iterable[_Union[ToolCall, _Mapping]]] = ..., stop_reason: _Optional[_Union[StopReason, str]] = ..., usage: _Optional[_Union[Usage, _Mapping]] = ..., timings: _Optional[_Union[Timings, _Mapping]] = ..., model: _Optional[str] = ...) -> None: ...

class EmbedRequest(_message.Message):
    __slots__ = ("texts", "model_path", "model_sha256", "model_name", "timeout_s", "tag")
    TEXTS_FIELD_NUMBER: _ClassVar[int]
    MODEL_PATH_FIELD_NUMBER: _ClassVar[int]
    MODEL_SHA256_FIELD_NUMBER: _ClassVar[int]
    MODEL_NAME_FIELD_NUMBER: _ClassVar[int]
    TIMEOUT_S_FIELD_NUMBER: _ClassVar[int]
    TAG_FIELD_NUMBER: _ClassVar[int]
    texts: _containers.RepeatedScalarFieldContainer[str]
    model_path: str
    model_sha256: str
    model_name: str
    timeout_s: float
    tag: str
    def __init__(self, texts: _Optional[_Iterable[str]] = ..., model_path: _Optional[str] = ..., model_sha256: _Optional[str] = ..., model_name: _Optional[str] = ..., timeout_s: _Optional[float] = ..., tag: _Optional[str] = ...) -> None: ...

class Embedding(_message.Message):
    __slots__ = ("values", "tokens")
    VALUES_FIELD_NUMBER: _ClassVar[int]
    TOKENS_FIELD_NUMBER: _ClassVar[int]
    values: _containers.RepeatedScalarFieldContainer[float]
    tokens: int
    def __init__(self, values: _Optional[_Iterable[float]] = ..., tokens: _Optional[int] = ...) -> None: ...

class EmbedResponse(_message.Message):
    __slots__ = ("embeddings", "model", "model_sha256", "dimensions", "pooling", "timings", "load_ms")
    EMBEDDINGS_FIELD_NUMBER: _ClassVar[int]
    MODEL_FIELD_NUMBER: _ClassVar[int]
    MODEL_SHA256_FIELD_NUMBER: _ClassVar[int]
    DIMENSIONS_FIELD_NUMBER: _ClassVar[int]
    POOLING_FIELD_NUMBER: _ClassVar[int]
    TIMINGS_FIELD_NUMBER: _ClassVar[int]
    LOAD_MS_FIELD_NUMBER: _ClassVar[int]
    embeddings: _containers.RepeatedCompositeFieldContainer[Embedding]
    model: str
    model_sha256: str
    dimensions: int
    pooling: str
    timings: Timings
    load_ms: float
    def __init__(self, embeddings: _Optional[_Iterable[_Union[Embedding, _Mapping]]] = ..., model: _Optional[str] = ..., model_sha256: _Optional[str] = ..., dimensions: _Optional[int] = ..., pooling: _Optional[str] = ..., timings: _Optional[_Union[Timings, _Mapping]] = ..., load_ms: _Optional[float] = ...) -> None: ...

class GetStatusRequest(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class GetStatusResponse(_message.Message):
    __slots__ = ("ready", "model_name", "model_sha256", "model_path", "model_size_bytes", "n_ctx", "backend", "backend_version", "version", "pid", "uptime_s", "requests_served", "in_flight", "idle_timeout_s", "socket_path", "n_threads", "system_info", "cpu_model", "n_batch", "n_gpu_layers", "gpu_offload_supported", "gen_tokens_per_s", "prompt_tokens_per_s", "n_threads_batch", "embedding_model_name", "embedding_model_sha256", "n_parallel")
    READY_FIELD_NUMBER: _ClassVar[int]
    MODEL_NAME_FIELD_NUMBER: _ClassVar[int]
    MODEL_SHA256_FIELD_NUMBER: _ClassVar[int]
    MODEL_PATH_FIELD_NUMBER: _ClassVar[int]
    MODEL_SIZE_BYTES_FIELD_NUMBER: _ClassVar[int]
    N_CTX_FIELD_NUMBER: _ClassVar[int]
    BACKEND_FIELD_NUMBER: _ClassVar[int]
    BACKEND_VERSION_FIELD_NUMBER: _ClassVar[int]
    VERSION_FIELD_NUMBER: _ClassVar[int]
    PID_FIELD_NUMBER: _ClassVar[int]
    UPTIME_S_FIELD_NUMBER: _ClassVar[int]
    REQUESTS_SERVED_FIELD_NUMBER: _ClassVar[int]
    IN_FLIGHT_FIELD_NUMBER: _ClassVar[int]
    IDLE_TIMEOUT_S_FIELD_NUMBER: _ClassVar[int]
    SOCKET_PATH_FIELD_NUMBER: _ClassVar[int]
    N_THREADS_FIELD_NUMBER: _ClassVar[int]
    SYSTEM_INFO_FIELD_NUMBER: _ClassVar[int]
    CPU_MODEL_FIELD_NUMBER: _ClassVar[int]
    N_BATCH_FIELD_NUMBER: _ClassVar[int]
    N_GPU_LAYERS_FIELD_NUMBER: _ClassVar[int]
    GPU_OFFLOAD_SUPPORTED_FIELD_NUMBER: _ClassVar[int]
    GEN_TOKENS_PER_S_FIELD_NUMBER: _ClassVar[int]
    PROMPT_TOKENS_PER_S_FIELD_NUMBER: _ClassVar[int]
    N_THREADS_BATCH_FIELD_NUMBER: _ClassVar[int]
    EMBEDDING_MODEL_NAME_FIELD_NUMBER: _ClassVar[int]
    EMBEDDING_MODEL_SHA256_FIELD_NUMBER: _ClassVar[int]
    N_PARALLEL_FIELD_NUMBER: _ClassVar[int]
    ready: bool
    model_name: str
    model_sha256: str
    model_path: str
    model_size_bytes: int
    n_ctx: int
    backend: str
    backend_version: str
    version: str
    pid: int
    uptime_s: float
    requests_served: int
    in_flight: int
    idle_timeout_s: float
    socket_path: str
    n_threads: int
    system_info: str
    cpu_model: str
    n_batch: int
    n_gpu_layers: int
    gpu_offload_supported: bool
    gen_tokens_per_s: float
    prompt_tokens_per_s: float
    n_threads_batch: int
    embedding_model_name: str
    embedding_model_sha256: str
    n_parallel: int
    def __init__(self, ready: _Optional[bool] = ..., model_name: _Optional[str] = ..., model_sha256: _Optional[str] = ..., model_path: _Optional[str] = ..., model_size_bytes: _Optional[int] = ..., n_ctx: _Optional[int] = ..., backend: _Optional[str] = ..., backend_version: _Optional[str] = ..., version: _Optional[str] = ..., pid: _Optional[int] = ..., uptime_s: _Optional[float] = ..., requests_served: _Optional[int] = ..., in_flight: _Optional[int] = ..., idle_timeout_s: _Optional[float] = ..., socket_path: _Optional[str] = ..., n_threads: _Optional[int] = ..., system_info: _Optional[str] = ..., cpu_model: _Optional[str] = ..., n_batch: _Optional[int] = ..., n_gpu_layers: _Optional[int] = ..., gpu_offload_supported: _Optional[bool] = ..., gen_tokens_per_s: _Optional[float] = ..., prompt_tokens_per_s: _Optional[float] = ..., n_threads_batch: _Optional[int] = ..., embedding_model_name: _Optional[str] = ..., embedding_model_sha256: _Optional[str] = ..., n_parallel: _Optional[int] = ...) -> None: ...

class ShutdownRequest(_message.Message):
    __slots__ = ("grace_s",)
    GRACE_S_FIELD_NUMBER: _ClassVar[int]
    grace_s: float
    def __init__(self, grace_s: _Optional[float] = ...) -> None: ...

class ShutdownResponse(_message.Message):
    __slots__ = ("accepted",)
    ACCEPTED_FIELD_NUMBER: _ClassVar[int]
    accepted: bool
    def __init__(self, accepted: _Optional[bool] = ...) -> None: ...
