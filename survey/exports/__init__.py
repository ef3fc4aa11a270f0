"""The exports layer: what leaves the server as files, built from the statistical core.

The codebook (``codebook``, and ``codebook_check`` for a codebook read back), responses.csv
(``export``), the variable labels of the statistics packages (``labels``), the SPSS and Stata
files (``statfiles``), the spreadsheet (``spreadsheet``) and the Frictionless data package
(``datapackage``). It imports ``survey.core``, never the store, the web app or the command line;
the core never imports it.
"""
