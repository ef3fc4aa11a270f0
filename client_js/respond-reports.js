/**
 * The report state of the respondent page (respond.js): each question's report, made on this
 * device when its answer is given, and the line under each shown question saying the exact
 * report sending will send for it, or that nothing is sent (report-line.js words it).
 *
 * Once a send was attempted, its reports may have reached the server, so a changed answer keeps
 * its report unless the respondent confirms a new one, which spends that question's ε′ again:
 * the page counts the reports made and says what the question has cost.
 */

import { describeReport, isNoneTicked, notAskedLine, reportLine, waitingLine } from './report-line.js';
import { clearInvalid, markInvalid, readAnswer } from './respond-fields.js';
import { _ } from './messages.js';

/**
 * Return ε′ as a short number for the page: rounded UP to three significant digits, as on every page (never below
 * the bound it states), ignoring float noise below 1e-12 relative (2 shows as "2").
 */
export function shortEpsilon(epsilon) {
  const value = Number(epsilon) * (1 - 1e-12);
  if (!(value > 0)) return '0';
  // The decimal exponent of value, read from its shortest exact decimal form (no float logarithm).
  const [, exponent = '0'] = value.toExponential().split('e');
  const scale = 10 ** Math.max(2 - Number(exponent), 0);
  return String(Number((Math.ceil(value * scale) / scale).toPrecision(12)));
}

/**
 * The reports of one page: makeReport(question, value) randomizes a true answer, which
 * read(question, fieldset) reads (readAnswer; respond-branching.js reads a question that does not apply).
 */
export class ReportState {
  constructor(fieldsets, asked, makeReport, read = readAnswer) {
    this.read = read;
    this.fieldsets = fieldsets;
    this.asked = asked;
    this.askedIds = new Set(asked.map((question) => question.id));
    this.makeReport = makeReport;
    // Each question's report, made when its answer is given: {key, report, noneTicked, spent}. Once a
    // send was attempted these may have reached the server, so they change only when the respondent
    // confirms (`attempted`).
    this.reports = new Map();
    this.attempted = false;
  }

  lineOf(question) { return this.fieldsets.get(question.id).querySelector('.report-preview'); }

  changed(question) { return this.fieldsets.get(question.id).querySelector('.report-changed'); }

  /** Write one question's line: `report` (JSON text) is set only when that report will be sent. */
  writeLine(question, text, report) {
    const line = this.lineOf(question);
    line.textContent = text;
    line.dataset.sends = report === undefined ? 'nothing' : 'report';
    if (report === undefined) delete line.dataset.report;
    else line.dataset.report = report;
    line.hidden = false;
  }

  /** Show under a question the exact report sending will send for it, or that nothing is sent. */
  showLine(question) {
    if (!this.askedIds.has(question.id)) {
      this.writeLine(question, notAskedLine());
      return;
    }
    const answer = this.read(question, this.fieldsets.get(question.id));
    const entry = this.reports.get(question.id);
    const earlier = this.changed(question).pending !== undefined;
    if ('message' in answer || entry === undefined || (!earlier && entry.key !== JSON.stringify(answer.value))) {
      this.writeLine(question, waitingLine(question));
      return;
    }
    const text = reportLine(question, entry.report, { noneTicked: entry.noneTicked, earlier });
    this.writeLine(question, text, JSON.stringify(entry.report));
  }

  /** Forget every report and empty every line (the page is done: nothing more will be sent). */
  clear() {
    this.reports.clear();
    this.fieldsets.forEach((fieldset) => {
      const line = fieldset.querySelector('.report-preview');
      line.hidden = true;
      line.textContent = '';
      delete line.dataset.report;
      delete line.dataset.sends;
    });
  }

  /** Keep the report of a changed answer, and offer a new one at the price of its ε′. */
  offerNewReport(question, value, key) {
    const box = this.changed(question);
    const entry = this.reports.get(question.id);
    box.querySelector('.report-changed-text').textContent = _('You changed this answer after a send that may have '
      + 'reached the server. The report already made (%(report)s) is kept, so that your privacy loss does not '
      + 'grow. A new report for your new answer would spend this question\'s privacy loss again (ε′ = %(epsilon)s '
      + 'more).', { report: describeReport(question, entry.report), epsilon: shortEpsilon(question.epsilon) });
    box.hidden = false;
    box.pending = { value, key };
  }

  /** Make the new report the respondent confirmed, and say what the question has now cost. */
  confirmNewReport(question) {
    const box = this.changed(question);
    if (!box.pending) return;
    const { value, key } = box.pending;
    const entry = this.reports.get(question.id);
    const spent = (entry.spent ?? 1) + 1;
    const report = this.makeReport(question, value);
    this.reports.set(question.id, { key, report, noneTicked: isNoneTicked(question, value), spent });
    box.pending = undefined;
    box.querySelector('.report-changed-text').textContent = _('A new report was made for your new answer. If the '
      + 'earlier send reached the server, this question has now cost ε′ = %(total)s (%(count)s reports at %(each)s '
      + 'each) instead of %(each)s.', {
      total: shortEpsilon(spent * question.epsilon), count: spent, each: shortEpsilon(question.epsilon),
    });
    box.querySelector('button').hidden = true;
    this.showLine(question);
  }

  /** Take a valid true answer: make its report unless it has one; return whether a new report was made. */
  takeAnswer(question, value) {
    const key = JSON.stringify(value);
    const entry = this.reports.get(question.id);
    const box = this.changed(question);
    if (entry !== undefined && entry.key === key) {
      if (box.pending) {
        box.pending = undefined;
        box.hidden = true;
      }
      return false;
    }
    if (entry !== undefined && this.attempted) {
      this.offerNewReport(question, value, key);
      return false;
    }
    const report = this.makeReport(question, value);
    this.reports.set(question.id, { key, report, noneTicked: isNoneTicked(question, value) });
    return true;
  }

  /** Randomize a question's answer as it is given and show its line (quietly: errors are shown when sending). */
  answerGiven(question) {
    const result = this.read(question, this.fieldsets.get(question.id));
    const usable = !('message' in result) && this.askedIds.has(question.id);
    const made = usable ? this.takeAnswer(question, result.value) : false;
    this.showLine(question);
    return made;
  }

  /** Check every asked answer; return {bad, fresh}: fieldsets without a usable answer, and with a report made now. */
  validate() {
    const bad = [];
    const fresh = [];
    for (const question of this.asked) {
      const fieldset = this.fieldsets.get(question.id);
      const result = this.read(question, fieldset);
      if ('message' in result) {
        markInvalid(fieldset, result.message);
        this.showLine(question);
        bad.push(fieldset);
      } else {
        clearInvalid(fieldset);
        if (this.answerGiven(question)) fresh.push(fieldset);
      }
    }
    return { bad, fresh };
  }

  /** Return the request body: exactly the reports the asked questions' lines show (else throw, sending nothing). */
  body(hash, submission, invite) {
    const answers = {};
    for (const question of this.asked) {
      const { report } = this.reports.get(question.id);
      const line = this.lineOf(question);
      if (line.hidden || line.dataset.sends !== 'report' || line.dataset.report !== JSON.stringify(report)) {
        throw new Error(_('the report shown for “%(question)s” is not the one that would be sent',
          { question: question.text }));
      }
      answers[question.id] = report;
    }
    const body = { design: hash, answers, submission };
    if (invite) body.invite = invite;
    return JSON.stringify(body);
  }
}
