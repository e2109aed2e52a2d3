"""Matching live requests against recordings: the rule table (``rules``), the normaliser
engine that applies it (``normalize``, ``ignore``), one projection per component
(``projection``), where two requests differ (``diff``), the exact-body index (``exact``),
the matcher itself (``matcher``) and the ``why`` report (``why``)."""
