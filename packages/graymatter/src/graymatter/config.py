"""Engine configuration (one pydantic model) and its environment-variable loader."""

from __future__ import annotations

import os
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, SecretStr, ValidationError, field_validator

from graymatter.constants import Confidence
from graymatter.errors import InvalidInput
from graymatter.models import SignalWeights, default_weights, require_finite
from graymatter.validation import first_error

EmbeddingMode = Literal["keyword", "auto", "ollama", "openai", "onnx", "hashing"]
SummariserName = Literal["ollama", "openai", "anthropic"]

DEFAULT_MAX_TEXT_BYTES = 64 * 1024
RRF_K = 60


class MemoryConfig(BaseModel):
    """Every tunable of the engine, with the reference defaults."""

    model_config = ConfigDict(extra="forbid", frozen=True, defer_build=True)

    top_k: int = Field(default=8, ge=1, le=1000)
    max_text_bytes: int = Field(default=DEFAULT_MAX_TEXT_BYTES, ge=1)
    max_agent_id_chars: int = Field(default=1024, ge=1)
    max_checkpoint_bytes: int = Field(default=16 * 1024 * 1024, ge=1)
    weights: SignalWeights = Field(default_factory=default_weights)
    rrf_k: int = Field(default=RRF_K, ge=1)
    half_life_hours: float = Field(default=720.0, gt=0)
    min_relevance: float = Field(default=0.0, ge=0.0, le=1.0)
    min_confidence: Confidence | None = None
    confidence_weight: float = Field(default=0.0, ge=0.0, le=0.5)
    prune_floor: float = Field(default=0.01, ge=0.0, le=1.0)
    consolidate_threshold: int = Field(default=20, ge=1)
    async_consolidate: bool = True
    max_async_consolidations: int = Field(default=2, ge=1)
    candidate_pool: int = Field(default=100, ge=1, description="keyword/vector candidates ranked per recall")
    recency_pool: int = Field(default=50, ge=1, description="most recent facts ranked by the recency signal")
    max_query_terms: int = Field(
        default=8, ge=1, description="rarest query terms kept for the keyword signal"
    )
    max_query_postings: int | None = Field(
        default=2000, ge=1, description="cap on the summed document frequency of the kept query terms"
    )
    min_vector_similarity: float = Field(
        default=0.3,
        ge=-1.0,
        le=1.0,
        description="cosine below which a vector neighbour is not a relevance hit",
    )
    context_max_gap_s: float = Field(
        default=3600.0, ge=0, description="keyword context loans only pass between facts written this close"
    )
    recency_resolution_s: float = Field(
        default=3600.0,
        ge=0,
        description="facts written this close together tie on recency when relevance exists",
    )
    embedding: EmbeddingMode = "keyword"
    ollama_url: str = "http://localhost:11434"
    ollama_model: str = "nomic-embed-text"
    openai_base_url: str = "https://api.openai.com/v1"
    openai_model: str = "text-embedding-3-small"
    openai_api_key: SecretStr | None = None
    onnx_model_path: str | None = None
    onnx_tokenizer_path: str | None = None
    rerank: bool = Field(
        default=True, description="the local model's recall re-reads its head with the local cross-encoder"
    )
    rerank_model_path: str | None = None
    rerank_tokenizer_path: str | None = None
    embed_timeout_s: float = Field(default=10.0, gt=0)
    summariser: SummariserName | None = None
    summariser_model: str | None = None
    anthropic_api_key: SecretStr | None = None
    anthropic_base_url: str = "https://api.anthropic.com"
    ollama_consolidate_model: str = "llama3.2"
    summarise_batch: int = Field(default=40, ge=2)

    @field_validator("confidence_weight", "min_relevance", "half_life_hours")
    @classmethod
    def _finite(cls, value: float) -> float:
        return require_finite(value)

    @classmethod
    def from_env(cls, env: dict[str, str] | None = None, **overrides: object) -> MemoryConfig:
        """Build a config from ``GRAYMATTER_*`` and provider-key environment variables, then ``overrides``."""
        env = dict(os.environ if env is None else env)
        values: dict[str, object] = {}
        mapping = {
            "GRAYMATTER_EMBEDDINGS": "embedding",
            "GRAYMATTER_OLLAMA_URL": "ollama_url",
            "GRAYMATTER_OLLAMA_MODEL": "ollama_model",
            "GRAYMATTER_OLLAMA_CONSOLIDATE_MODEL": "ollama_consolidate_model",
            "GRAYMATTER_OPENAI_MODEL": "openai_model",
            "GRAYMATTER_OPENAI_BASE_URL": "openai_base_url",
            "OPENAI_API_KEY": "openai_api_key",
            "ANTHROPIC_API_KEY": "anthropic_api_key",
            "GRAYMATTER_ONNX_MODEL": "onnx_model_path",
            "GRAYMATTER_ONNX_TOKENIZER": "onnx_tokenizer_path",
            "GRAYMATTER_RERANK": "rerank",
            "GRAYMATTER_RERANK_MODEL": "rerank_model_path",
            "GRAYMATTER_RERANK_TOKENIZER": "rerank_tokenizer_path",
            "GRAYMATTER_CONSOLIDATE_LLM": "summariser",
            "GRAYMATTER_CONSOLIDATE_MODEL": "summariser_model",
            "GRAYMATTER_MAX_TEXT_BYTES": "max_text_bytes",
            "GRAYMATTER_TOP_K": "top_k",
        }
        for var, field in mapping.items():
            value = env.get(var)
            if value is not None and value.strip() != "":
                values[field] = value.strip()
        if values.get("summariser") in ("off", "none"):
            values.pop("summariser")
        values.update(overrides)
        if not values:
            return (
                cls.model_construct()
            )  # the defaults are valid by construction; skip building the validator
        try:
            return cls.model_validate(values)
        except ValidationError as exc:  # name the setting, never echo secrets
            where, message = first_error(exc)
            variable = next((var for var, field in mapping.items() if field == where), where)
            raise InvalidInput(f"invalid setting {variable}: {message}") from None
