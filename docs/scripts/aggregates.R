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

# The bounded-mean interval's constants (survey.core.bounded_mean): the largest bet on the [0, 1]
# scale, the ratio between neighbouring bets, and the bisection steps that find each end.
LARGEST_BET <- 64
BET_FACTOR <- 2
BISECTIONS <- 44

clip <- function(value, low, high) min(max(value, low), high)

fraction <- function(text) {
  parts <- as.numeric(strsplit(text, "/", fixed = TRUE)[[1]])
  if (length(parts) == 1) parts else parts[1] / parts[2]
}

# Clip [low, high] to [0, 1]; an interval wholly beyond an end is moved inside keeping its width
# (never a point). Such an interval misses every feasible value already, so coverage is unchanged.
inside <- function(low, high) {
  width <- min(high - low, 1)
  if (low >= 1) return(c(1 - width, 1))
  if (high <= 0) return(c(0, width))
  c(clip(low, 0, 1), clip(high, 0, 1))
}

# An estimand that is one indicator: the share a of reports equal to `value`, debiased by
# (a - q)/(p - q). The interval is Clopper-Pearson on the count at level
# 1 - (1 - level)/simultaneous_over (Bonferroni over a question's options), mapped the same
# way and moved inside [0, 1] (`inside`); the standard error is taken at a clipped to
# [min(p, q), max(p, q)], so that it is never a false 0.
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
  ends <- inside(min((share_low - q) / spread, (share_high - q) / spread),  # swapped when p < q
                 max((share_low - q) / spread, (share_high - q) / spread))
  list(n = n, noisy_share = share, estimate = lo + width * (share - q) / spread, std_error = std_error,
       ci_low = lo + width * ends[1], ci_high = lo + width * ends[2])
}

# The fixed grid of bets for n values in [0, 1] whose variance lies in [least, most], chosen
# before the data: geometric from the bet suited to the most variance to that suited to the least.
bets <- function(n, threshold, least, most) {
  smallest <- sqrt(2 * threshold / (n * most))
  largest <- if (least <= 0) LARGEST_BET else sqrt(2 * threshold / (n * least))
  largest <- max(min(largest, LARGEST_BET), smallest)
  steps <- max(1, ceiling(log(largest / smallest) / log(BET_FACTOR) - 1e-9) + 1)
  if (steps == 1) smallest else exp(seq(log(smallest), log(largest), length.out = steps))
}

# Whether the bets' average wealth against "the mean is at most m" reaches exp(threshold) = 2/alpha.
# Each bet's log-wealth is bounded below by its value at the two-point law {0 w.p. 1 - w, top w.p. w}
# with the data's n, sum and sum of squares; a bet with bet * m >= 1 counts as zero wealth.
rejects <- function(m, top, weight, n, grid, threshold) {
  allowed <- grid[grid * m < 1]
  if (length(allowed) == 0) return(FALSE)
  gain <- log1p(allowed * (top - m))
  loss <- if (weight < 1) log1p(-allowed * m) else 0
  logs <- n * (weight * gain + (1 - weight) * loss)
  peak <- max(logs)
  peak + log(sum(exp(logs - peak)) / length(grid)) >= threshold
}

# The largest mean m in [0, total/n] that the test rejects (0 when it rejects none): the lower end.
lower_end <- function(total, squares, n, threshold, least, most) {
  grid <- bets(n, threshold, least, most)
  top <- if (squares > 0) squares / total else 0                  # the two-point law's upper point ...
  weight <- if (squares > 0) total * total / (n * squares) else 0  # ... and its weight
  if (!rejects(0, top, weight, n, grid, threshold)) return(0)
  rejected <- 0; accepted <- total / n
  for (step in seq_len(BISECTIONS)) {
    middle <- (rejected + accepted) / 2
    if (rejects(middle, top, weight, n, grid, threshold)) rejected <- middle else accepted <- middle
  }
  rejected
}

# The interval for the mean of values in [low, high] valid at every n (a test by betting,
# survey.core.bounded_mean): the values rescaled to u in [0, 1], the lower end is the test on u,
# the upper end the same test on 1 - u, each at alpha/2. `variance`, the (least, most) variance
# of one value known before the data, only places the bets.
mean_interval <- function(values, low, high, level, variance) {
  n <- length(values); width <- high - low
  units <- (values - low) / width
  total <- clip(sum(units), 0, n)
  squares <- clip(sum(units * units), total * total / n, total)
  threshold <- log(2 / (1 - level))
  most <- min(max(variance[2] / width^2, 1e-12), 0.25)
  least <- min(variance[1] / width^2, most)
  lower <- lower_end(total, squares, n, threshold, least, most)
  upper <- 1 - lower_end(n - total, max(n - 2 * total + squares, 0), n, threshold, least, most)
  c(low + width * lower, low + width * upper)
}

# A number reported as a level (piecewise, hybrid, opm): the mean of the reported levels' values R,
# which has mean q + (p - q)x for the answer x scaled to [0, 1]. The standard error uses the sample
# variance of R raised to the least variance of one report; the interval is `mean_interval` on R
# over report_range, mapped the same way and moved inside [0, 1].
level_row <- function(cells, estimand, level) {
  n <- length(cells)
  p <- estimand$p; q <- estimand$q
  scale <- unlist(estimand$scale)
  lo <- scale[1]; width <- scale[2] - scale[1]; spread <- p - q
  if (n == 0) return(list(n = 0, noisy_share = NA, estimate = NA, std_error = NA, ci_low = lo, ci_high = lo + width))
  if (!is.null(estimand$level_values)) {  # hybrid: each level's value is listed
    values <- vapply(estimand$level_values, fraction, numeric(1))
    levels <- values[cells + 1]
  } else {  # piecewise and opm: R = (k + 1/2)/levels
    levels <- (cells + 0.5) / estimand$levels
  }
  variance <- unlist(estimand$report_variance)
  mean_level <- mean(levels)
  unit <- (mean_level - q) / spread
  std_error <- if (n > 1) width * sqrt(max(var(levels), variance[1]) / n) / spread else NA
  report_range <- vapply(estimand$report_range, fraction, numeric(1))
  ci_r <- mean_interval(levels, report_range[1], report_range[2], level, variance)
  ends <- inside((ci_r[1] - q) / spread, (ci_r[2] - q) / spread)
  list(n = n, noisy_share = mean_level, estimate = lo + width * unit, std_error = std_error,
       ci_low = lo + width * ends[1], ci_high = lo + width * ends[2])
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
