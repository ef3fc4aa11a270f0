# Logistic regression of a randomized yes/no item on exact covariates (numbers linearly, categories as
# indicators), from a responses file and an `ldp-survey codebook` of another design: the numbers of
# `ldp-survey analyze survey.csv regress OUTCOME COVARIATE... --codebook book.json`, written independently.
#
# Usage: Rscript number_covariates.R survey.csv book.json OUTCOME COVARIATE...
# Prints CSV: term, estimate (log odds ratio, a number's per unit), std_error (observed information).
# Needs base R and jsonlite (Debian: r-cran-jsonlite).
#
# The likelihood of each report r given covariates x is P(r = 1 | x) = q + (p - q) * logistic(x'beta)
# with the item's p = P(report 1 | true yes) and q = P(report 1 | true no) (Blair, Imai & Zhou 2015).
library(jsonlite)

args <- commandArgs(trailingOnly = TRUE)
if (length(args) < 4) stop("usage: Rscript number_covariates.R survey.csv book.json OUTCOME COVARIATE...")
book <- fromJSON(args[2], simplifyVector = FALSE)
outcome <- args[3]
covariates <- args[-(1:3)]
kinds <- setNames(sapply(book$columns, function(column) column$kind), sapply(book$columns, function(column) column$name))
item <- Filter(function(estimand) estimand$column == outcome, book$estimands)[[1]]
p <- item$p
q <- item$q

data <- read.csv(args[1], colClasses = "character", check.names = FALSE, na.strings = "", encoding = "UTF-8")
data <- data[complete.cases(data[, c(outcome, covariates), drop = FALSE]), , drop = FALSE]
y <- as.integer(data[[outcome]])

# The design: an intercept, a number as it is, a category's indicators against its first value
# (numbers first, in order, then words in code-point order).
design <- matrix(1, nrow(data), 1)
terms <- "(intercept)"
for (name in covariates) {
  values <- data[[name]]
  if (kinds[[name]] == "number") {
    design <- cbind(design, as.numeric(values))
    terms <- c(terms, name)
  } else if (kinds[[name]] == "category") {
    labels <- unique(values)
    numeric <- suppressWarnings(as.numeric(labels))
    labels <- labels[order(is.na(numeric), numeric, labels, method = "radix")]
    for (label in labels[-1]) {
      design <- cbind(design, as.numeric(values == label))
      terms <- c(terms, paste0(name, ": ", label))
    }
  } else {
    stop(name, " is randomized: beside a number, it needs regression calibration (ldp-survey regress does it)")
  }
}

# Fit on centred, scaled columns (the same model, better conditioned), then map back per unit.
centre <- c(0, colMeans(design)[-1])
scale <- c(1, apply(design, 2, function(column) sqrt(mean((column - mean(column))^2)))[-1])
scaled <- sweep(sweep(design, 2, centre), 2, scale, "/")

minus_log_likelihood <- function(beta) {
  share <- q + (p - q) * plogis(drop(scaled %*% beta))
  -sum(ifelse(y == 1, log(share), log1p(-share)))
}
minus_gradient <- function(beta) {
  yes <- plogis(drop(scaled %*% beta))
  share <- q + (p - q) * yes
  slope <- (p - q) * yes * (1 - yes)
  -drop(crossprod(scaled, ifelse(y == 1, slope / share, -slope / (1 - share))))
}
beta <- optim(rep(0, ncol(scaled)), minus_log_likelihood, minus_gradient, method = "BFGS",
              control = list(reltol = 1e-15, maxit = 10000))$par
for (step in 1:20) {  # Newton steps on the numerical Hessian polish BFGS's answer
  move <- solve(optimHess(beta, minus_log_likelihood, minus_gradient), minus_gradient(beta))
  beta <- beta - move
  if (max(abs(move)) < 1e-12) break
}
covariance <- solve(optimHess(beta, minus_log_likelihood, minus_gradient))

# Per unit: beta_j / scale_j, and the intercept less each slope times its centre.
back <- diag(1 / scale, length(scale))
back[1, -1] <- -centre[-1] / scale[-1]
estimate <- drop(back %*% beta)
std_error <- sqrt(diag(back %*% covariance %*% t(back)))
write.csv(data.frame(term = terms, estimate = sprintf("%.12g", estimate), std_error = sprintf("%.12g", std_error)),
          stdout(), row.names = FALSE, quote = FALSE)
