# Recompute a survey's estimates from its two exports alone: responses.csv and codebook.json.
#
# Usage:
#   Rscript aggregates.R responses.csv codebook.json [LEVEL] > aggregates.csv
#
# Writes the columns of the aggregates CSV (question, option, kind, mechanism, epsilon, n,
# noisy_share, estimate, std_error, ci_low, ci_high, ci_level, ci_kind, ci_planned; intervals
# valid at the planned end, ci_kind "fixed"), one row per estimand of the
# codebook, numbers at full precision; not the consistent view of a single choice (consistent,
# consistent_low, consistent_high), which the codebook's method states. Needs base R and
# jsonlite; nothing of ldp-survey.

library(jsonlite)

clip <- function(value, low, high) min(max(value, low), high)

fraction <- function(text) {
  parts <- as.numeric(strsplit(text, "/", fixed = TRUE)[[1]])
  if (length(parts) == 1) parts else parts[1] / parts[2]
}

# An estimand that is one indicator: the share a of reports equal to `value`, debiased by
# (a - q)/(p - q). The interval is Clopper-Pearson on the count at level
# 1 - (1 - level)/simultaneous_over (Bonferroni over a question's options), mapped the same
# way and clipped to [0, 1]; the standard error is taken at a clipped to [min(p, q), max(p, q)],
# so that it is never a false 0.
indicator_row <- function(cells, estimand, level) {
  n <- length(cells)
  p <- estimand$p; q <- estimand$q
  scale <- if (is.null(estimand$scale)) c(0, 1) else unlist(estimand$scale)
  lo <- scale[1]; width <- scale[2] - scale[1]; spread <- p - q
  if (n == 0) return(list(n = 0, noisy_share = NA, estimate = NA, std_error = NA, ci_low = lo, ci_high = lo + width))
  ones <- sum(cells == estimand$value)
  share <- ones / n
  alpha <- (1 - level) / estimand$simultaneous_over
  share_low <- if (ones == 0) 0 else qbeta(alpha / 2, ones, n - ones + 1)
  share_high <- if (ones == n) 1 else qbeta(1 - alpha / 2, ones + 1, n - ones)
  # The standard error at the share clipped to [min(p, q), max(p, q)], where every possible share lies.
  feasible <- clip(share, min(p, q), max(p, q))
  std_error <- if (n > 1) width * sqrt(feasible * (1 - feasible) / (n - 1)) / abs(spread) else NA
  ends <- sort(c((share_low - q) / spread, (share_high - q) / spread))  # swapped when p < q
  list(n = n, noisy_share = share, estimate = lo + width * (share - q) / spread, std_error = std_error,
       ci_low = lo + width * clip(ends[1], 0, 1), ci_high = lo + width * clip(ends[2], 0, 1))
}

# A number under the piecewise or hybrid mechanism: the mean of the reported levels' values R,
# which has mean q + (p - q)x for the answer x scaled to [0, 1]; a Student-t interval.
level_row <- function(cells, estimand, level) {
  n <- length(cells)
  p <- estimand$p; q <- estimand$q
  scale <- unlist(estimand$scale)
  lo <- scale[1]; width <- scale[2] - scale[1]; spread <- p - q
  if (n == 0) return(list(n = 0, noisy_share = NA, estimate = NA, std_error = NA, ci_low = lo, ci_high = lo + width))
  if (!is.null(estimand$level_values)) {  # hybrid: each level's value is listed
    values <- vapply(estimand$level_values, fraction, numeric(1))
    levels <- values[cells + 1]
  } else {  # piecewise: R = (k + 1/2)/levels
    levels <- (cells + 0.5) / estimand$levels
  }
  mean_level <- mean(levels)
  unit <- (mean_level - q) / spread
  if (n < 2) return(list(n = n, noisy_share = mean_level, estimate = lo + width * unit, std_error = NA,
                         ci_low = lo, ci_high = lo + width))
  se_unit <- sqrt(var(levels) / n) / spread
  half <- qt(1 - (1 - level) / 2, n - 1) * se_unit
  list(n = n, noisy_share = mean_level, estimate = lo + width * unit, std_error = width * se_unit,
       ci_low = lo + width * clip(unit - half, 0, 1), ci_high = lo + width * clip(unit + half, 0, 1))
}

aggregates <- function(responses, book, level = 0.95) {
  questions <- list()
  for (column in book$columns) questions[[column$question]] <- column
  rows <- lapply(book$estimands, function(estimand) {
    cells <- responses[[estimand$column]]
    cells <- cells[!is.na(cells)]  # an empty cell: a question not asked
    compute <- if (is.null(estimand$value)) level_row else indicator_row
    question <- questions[[estimand$question]]
    data.frame(question = estimand$question, option = estimand$option, kind = question$kind,
               mechanism = question$mechanism, epsilon = question$epsilon,
               compute(cells, estimand, level), ci_level = level, ci_kind = "fixed", ci_planned = NA,
               stringsAsFactors = FALSE)
  })
  do.call(rbind, rows)
}

args <- commandArgs(trailingOnly = TRUE)
if (length(args) < 2 || length(args) > 3) {
  stop("usage: Rscript aggregates.R responses.csv codebook.json [LEVEL]")
}
book <- fromJSON(args[2], simplifyVector = FALSE)
responses <- read.csv(args[1], colClasses = c(response_id = "character"), check.names = FALSE,
                      na.strings = "", stringsAsFactors = FALSE)
level <- if (length(args) == 3) as.numeric(args[3]) else 0.95
estimates <- aggregates(responses, book, level)
numbers <- vapply(estimates, is.numeric, logical(1))
estimates[numbers] <- lapply(estimates[numbers], function(x) ifelse(is.na(x), NA, sprintf("%.17g", as.numeric(x))))
write.csv(estimates, stdout(), row.names = FALSE, na = "", quote = TRUE)
