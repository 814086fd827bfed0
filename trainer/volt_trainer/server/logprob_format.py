"""Logprobs in the two OpenAI shapes: chat (``content`` entries) and legacy completions (parallel lists)."""

from __future__ import annotations

from .detokenize import token_bytes
from .generation import ChoiceState


def _piece(tokenizer, token_id: int) -> str:
    return tokenizer.decode([token_id])


def chat_logprobs(tokenizer, state: ChoiceState, start: int = 0) -> dict:
    """``{content: [{token, logprob, bytes, top_logprobs}]}`` for tokens ``start:`` of the choice."""
    content = []
    for token_id, logprob, top in zip(state.token_ids[start:], state.logprobs[start:], state.tops[start:]):
        content.append(
            {
                "token": _piece(tokenizer, token_id),
                "logprob": logprob,
                "bytes": token_bytes(tokenizer, token_id),
                "top_logprobs": [
                    {"token": _piece(tokenizer, i), "logprob": lp, "bytes": token_bytes(tokenizer, i)} for i, lp in top
                ],
            }
        )
    return {"content": content}


def completion_logprobs(tokenizer, state: ChoiceState, start: int = 0, offset: int = 0) -> dict:
    """``{tokens, token_logprobs, top_logprobs, text_offset}`` for tokens ``start:``; offsets start at ``offset``."""
    tokens, offsets = [], []
    for token_id in state.token_ids[start:]:
        piece = _piece(tokenizer, token_id)
        tokens.append(piece)
        offsets.append(offset)
        offset += len(piece)
    return {
        "tokens": tokens,
        "token_logprobs": state.logprobs[start:],
        "top_logprobs": [{_piece(tokenizer, i): lp for i, lp in top} for top in state.tops[start:]],
        "text_offset": offsets,
    }
