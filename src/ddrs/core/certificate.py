"""What a certificate says, shared by every layer and torch-free: the abstention a log records
(Cohen et al. 2019, §3.2) and the line between easy and hard inputs (Sun et al. 2024, Table 1)."""

#: ``predict`` of an abstention (its ``radius`` is 0), as in Cohen et al.'s logs and
#: :class:`ddrs.core.smoothing.Smooth`.
ABSTAIN = -1
#: p_A of the true class above it: an easy input; below it: a hard one (Sun et al. 2024, Table 1:
#: "easy (p_A > 0.5) and hard (p_A < 0.5) samples"), the inputs that can and cannot add to ACR
EASY_ABOVE = 0.5
