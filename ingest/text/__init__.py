"""The one text module: scripts, languages, stop words, stemming, segmentation and sentence cuts.

Search (retrieval.fts, retrieval.chunkstore, retrieval.term_coverage), the evidence (gateway.answer)
and the checks read text through these functions, so a passage is cut, tokenised and stemmed the same
way wherever it is looked at. It lives in `ingest` because ingest is the lowest room: the chunker
records each chunk's language with it, and every other room may import ingest.
"""
