"""Bytes on disk: checkpoints (:mod:`.checkpoint`), the state-tree codec they use (:mod:`.tree`: JSON +
``.npz``, no pickle) and the code fingerprint that tells a resume what changed (:mod:`.fingerprint`)."""
