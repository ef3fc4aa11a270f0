# Recompute a survey's posterior (credible) intervals from its two exports alone: responses.csv and
# codebook.json.
#
# Usage:
#   Rscript posterior.R responses.csv codebook.json [A B [LEVEL]] > credible.csv
#
# For every estimand the codebook gives as one indicator (a column, the value counted in it, and
# the exact p and q), with k of its n non-empty cells equal to the value: the equal-tailed LEVEL
# (default 0.95) interval of the posterior proportional to
#   x^(A-1) (1-x)^(B-1) lam^k (1-lam)^(n-k),  lam = q + (p - q) x,  x in [0, 1]
# under the prior Beta(A, B) (default A = B = 1/2, Jeffreys; a single choice's options take the
# symmetric Dirichlet(A, ..., A), whose marginal for one option is Beta(A, (d - 1) A)): Winkler &
# Franklin (1979), "Warner's randomized response model: a Bayesian approach", JASA 74(365). Yes/no
# items, the options of choice and multiple-choice questions and numbers randomized by rounding to
# an end (Duchi et al. 2013) are such indicators; a number's mean is mapped from [0, 1] to its
# [min, max]. An estimand of a level mechanism (its value is null) is left out: the product's
# posterior for it uses a normal approximation, which the codebook's method states.
#
# Writes question, option, ci_low, ci_high, ci_level and ci_kind as
# `ldp-survey aggregate --intervals posterior --prior A,B --format csv` does, numbers at full
# precision. Base R's integrate() and uniroot() do the work; jsonlite reads the codebook (as in
# aggregates.R). Nothing of ldp-survey.

library(jsonlite)

DROP <- 80  # the posterior is integrated where the log-likelihood is within DROP of its maximum

clip <- function(value, low, high) min(max(value, low), high)

# The equal-tailed `level` interval of x given k of n reports 1, each 1 with chance q + (p - q) x,
# under a Beta(a, b) prior.
credible <- function(k, n, p, q, a, b, level) {
  alpha <- 1 - level
  if (n == 0) return(qbeta(c(alpha / 2, 1 - alpha / 2), a, b))
  slope <- p - q
  mode <- clip((k / n - q) / slope, 0, 1)  # where the likelihood is largest
  top <- q + slope * mode
  # The log-likelihood minus its maximum at x, y = 1 - x (each given exactly: near 1 a peak narrower
  # than 1e-6 needs y, not 1 - x), without cancelling terms of size n. A count of 0 adds nothing
  # (its chance may be 0 at the maximum when q = 0 or p = 1); where a chance reaches 0 the ratio is
  # -1 up to rounding (log1p(-1) = -Inf).
  loglik <- function(x, y) {
    step <- if (mode <= 0.5) slope * (x - mode) else slope * ((1 - mode) - y)
    ones <- if (k > 0) k * log1p(pmax(step / top, -1)) else 0
    zeros <- if (k < n) (n - k) * log1p(pmax(-step / (1 - top), -1)) else 0
    ones + zeros
  }
  # It is concave: it is within DROP of its maximum on one interval [from, to].
  edge <- function(end) {
    if (loglik(end, 1 - end) > -DROP) return(end)
    inner <- function(x) max(loglik(x, 1 - x), -1e300) + DROP
    uniroot(inner, sort(c(end, mode)), tol = 1e-15)$root
  }
  from <- edge(0); to <- edge(1)
  middle <- (from + to) / 2
  integral <- function(f, lower, upper) {
    if (upper <= lower) return(0)
    integrate(f, lower, upper, rel.tol = 1e-11, abs.tol = 0, subdivisions = 2000L)$value
  }
  # The mass of [lower, upper] inside [from, to], cut at `middle`: the left piece integrated in x,
  # the right one in y = 1 - x. A piece that reaches 0 where the prior's density is infinite
  # (a < 1) is integrated in s with x = middle * s^(1/a), which turns x^(a-1) dx into the constant
  # middle^a / a ds; likewise the right piece at x = 1 with b < 1.
  left <- function(lower, upper) {
    if (from > 0 || a >= 1) {
      return(integral(function(x) exp((a - 1) * log(x) + (b - 1) * log1p(-x) + loglik(x, 1 - x)), lower, upper))
    }
    smooth <- function(s) {
      x <- middle * s^(1 / a)
      exp((b - 1) * log1p(-x) + loglik(x, 1 - x))
    }
    middle^a / a * integral(smooth, (lower / middle)^a, (upper / middle)^a)
  }
  right <- function(lower, upper) {
    if (to < 1 || b >= 1) {
      return(integral(function(y) exp((a - 1) * log1p(-y) + (b - 1) * log(y) + loglik(1 - y, y)), 1 - upper,
                      1 - lower))
    }
    smooth <- function(s) {
      y <- (1 - middle) * s^(1 / b)
      exp((a - 1) * log1p(-y) + loglik(1 - y, y))
    }
    (1 - middle)^b / b * integral(smooth, ((1 - upper) / (1 - middle))^b, ((1 - lower) / (1 - middle))^b)
  }
  mass <- function(lower, upper) {
    left(lower, min(upper, middle)) + right(max(lower, middle), upper)
  }
  total <- mass(from, to)
  # Each end from its own side: the lower where the mass below reaches alpha/2, the upper where
  # the mass above does.
  low <- uniroot(function(x) mass(from, x) / total - alpha / 2, c(from, to), tol = 1e-14)$root
  high <- uniroot(function(x) mass(x, to) / total - alpha / 2, c(from, to), tol = 1e-14)$root
  c(low, high)
}

prior_name <- function(a, b) {
  if (a == 0.5 && b == 0.5) return("jeffreys")
  if (a == 1 && b == 1) return("uniform")
  sprintf("beta(%s,%s)", format(a, digits = 15), format(b, digits = 15))
}

posterior <- function(responses, book, a = 0.5, b = 0.5, level = 0.95) {
  kinds <- list()
  for (column in book$columns) kinds[[column$question]] <- column$kind
  options <- table(vapply(book$estimands, function(estimand) estimand$question, character(1)))
  rows <- list()
  for (estimand in book$estimands) {
    if (is.null(estimand$value)) next
    cells <- responses[[estimand$column]]
    cells <- cells[!is.na(cells)]  # an empty cell: a question not asked
    share_b <- if (kinds[[estimand$question]] == "choice") (options[[estimand$question]] - 1) * a else b
    ends <- credible(sum(cells == estimand$value), length(cells), estimand$p, estimand$q, a, share_b, level)
    scale <- if (is.null(estimand$scale)) c(0, 1) else unlist(estimand$scale)
    ends <- scale[1] + (scale[2] - scale[1]) * ends
    rows[[length(rows) + 1]] <- data.frame(
      question = estimand$question, option = estimand$option,
      ci_low = sprintf("%.17g", ends[1]), ci_high = sprintf("%.17g", ends[2]),
      ci_level = format(level), ci_kind = paste0("posterior-", prior_name(a, b)), stringsAsFactors = FALSE)
  }
  do.call(rbind, rows)
}

args <- commandArgs(trailingOnly = TRUE)
if (!(length(args) %in% c(2, 4, 5))) {
  stop("usage: Rscript posterior.R responses.csv codebook.json [A B [LEVEL]]")
}
book <- fromJSON(args[2], simplifyVector = FALSE)
responses <- read.csv(args[1], colClasses = "character", check.names = FALSE, na.strings = "",
                      stringsAsFactors = FALSE)
# Reports are whole numbers; the response_id and any other text column stays text.
for (estimand in book$estimands) {
  responses[[estimand$column]] <- as.integer(responses[[estimand$column]])
}
a <- if (length(args) >= 4) as.numeric(args[3]) else 0.5
b <- if (length(args) >= 4) as.numeric(args[4]) else 0.5
level <- if (length(args) == 5) as.numeric(args[5]) else 0.95
write.csv(posterior(responses, book, a, b, level), stdout(), row.names = FALSE, quote = TRUE)
