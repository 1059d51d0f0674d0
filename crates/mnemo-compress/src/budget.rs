//! Priority-greedy line-budget allocation (seed §6 and §18), in half-lines.
//!
//! Every quantity is an integer number of **half-lines** ([`HalfLines`]): a
//! LOW entry costs 1 unit, MEDIUM 2, HIGH 2 or 4, CRITICAL always 6.
//!
//! * A phase's budget is `max(min_phase_lines, floor(total_lines / phases))`
//!   lines plus the carryover of the previous phase.
//! * Carryover is `floor(unused_lines × carryover_percent / 100)` **whole
//!   lines**, where `unused_lines` may be a half (`7.5`): this reproduces the
//!   seed's worked example (12-line budget, 4 used → 1 line carried → the next
//!   phase has 13). The rest of the unused budget is released.
//! * Entries are sorted by exact score, descending; ties keep input order.
//! * CRITICAL is always 3 lines, whatever the budget (the floor of §18).
//! * A HIGH entry gets 2 lines when the phase budget still holds them after
//!   every CRITICAL entry, the HIGH entries placed before it, and a reserve of
//!   the minimum cost of every entry after it (HIGH 1, MEDIUM 1, LOW 0.5);
//!   otherwise 1 line. MEDIUM is 1 line, LOW half a line.
//! * A `partial` entry is at least MEDIUM (and carries the ⚠️ marker).
//! * No entry is ever dropped. Going over budget is reported as a
//!   [`BudgetFlag::Overrun`]; more CRITICAL entries than allowed and CRITICAL
//!   entries that alone exceed the total budget are flagged as §18 says.

use std::fmt;

use mnemo_model::config::BudgetConfig;
use mnemo_score::Band;
use serde::Serialize;

/// An amount of lines in half-line units.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default, Serialize)]
#[serde(transparent)]
pub struct HalfLines(pub u32);

impl HalfLines {
    /// `n` whole lines.
    pub const fn lines(n: u32) -> HalfLines {
        HalfLines(n.saturating_mul(2))
    }

    /// The number of half-line units.
    pub const fn units(self) -> u32 {
        self.0
    }

    /// Sum, saturating.
    pub const fn plus(self, other: HalfLines) -> HalfLines {
        HalfLines(self.0.saturating_add(other.0))
    }

    /// Difference, floored at zero.
    pub const fn minus(self, other: HalfLines) -> HalfLines {
        HalfLines(self.0.saturating_sub(other.0))
    }
}

impl fmt::Display for HalfLines {
    /// Whole lines print as `4`, halves as `5.5`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.0.is_multiple_of(2) {
            write!(f, "{}", self.0 / 2)
        } else {
            write!(f, "{}.5", self.0 / 2)
        }
    }
}

/// How an entry is written.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Mode {
    /// CRITICAL 3 lines, HIGH 2 lines.
    Expanded,
    /// One line (HIGH when the budget is short, MEDIUM).
    Standard,
    /// Half a line: files only (LOW).
    Aggressive,
}

impl Mode {
    /// `expanded`, `standard`, `aggressive`.
    pub fn as_str(self) -> &'static str {
        match self {
            Mode::Expanded => "expanded",
            Mode::Standard => "standard",
            Mode::Aggressive => "aggressive",
        }
    }
}

/// The budget parameters of one feature.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct BudgetParams {
    /// Hard cap of the `## Completed Phases` section, in lines.
    pub total_lines: u32,
    /// Planned phases of the feature (at least 1).
    pub phases: u32,
    /// Floor of a phase's base budget, in lines.
    pub min_phase_lines: u32,
    /// Share of unused budget carried to the next phase, 0–100.
    pub carryover_percent: u32,
    /// More CRITICAL entries than this in one phase are flagged.
    pub max_critical_per_phase: u32,
}

impl BudgetParams {
    /// Parameters from the configuration; `phases` overrides the default.
    pub fn from_config(budget: &BudgetConfig, phases: Option<u32>) -> BudgetParams {
        BudgetParams {
            total_lines: budget.total_lines,
            phases: phases.unwrap_or(budget.default_phases).max(1),
            min_phase_lines: budget.min_phase_lines,
            carryover_percent: budget.carryover_percent.min(100),
            max_critical_per_phase: budget.max_critical_per_phase,
        }
    }

    /// `max(min_phase_lines, floor(total_lines / phases))` lines.
    pub fn base(&self) -> HalfLines {
        let per = self.total_lines / self.phases.max(1);
        HalfLines::lines(per.max(self.min_phase_lines))
    }

    /// The whole-line carryover of a phase that had `allocated` and used `used`.
    pub fn carryover(&self, allocated: HalfLines, used: HalfLines) -> HalfLines {
        let unused = u64::from(allocated.minus(used).units());
        // unused is in half-lines: lines = unused / 2, so floor(unused × p / 200).
        let lines = unused * u64::from(self.carryover_percent.min(100)) / 200;
        HalfLines::lines(u32::try_from(lines).unwrap_or(u32::MAX))
    }
}

/// One entry to allocate.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct AllocItem {
    /// Exact score in ten-thousandths (`Total::ten_thousandths`).
    pub score: u32,
    /// The band the score gave.
    pub band: Band,
    /// The entry's status is `partial`: at least MEDIUM, with ⚠️.
    pub partial: bool,
}

/// What the allocator decided for one entry.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct EntryAllocation {
    /// Position of the entry in the phase's input.
    pub index: usize,
    /// Exact score in ten-thousandths.
    pub score: u32,
    /// The band used (raised to MEDIUM for `partial`).
    pub band: Band,
    /// The band the score gave.
    pub scored_band: Band,
    /// Lines given, in half-lines.
    pub lines: HalfLines,
    /// How it is written.
    pub mode: Mode,
    /// Write the ⚠️ marker (status `partial`).
    pub warn: bool,
}

/// A guardrail of §18 that fired.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum BudgetFlag {
    /// More CRITICAL entries in a phase than allowed.
    TooManyCritical {
        /// Phase label.
        phase: String,
        /// CRITICAL entries in the phase.
        count: u32,
        /// The configured maximum.
        max: u32,
    },
    /// The CRITICAL entries alone need more than the total budget.
    CriticalExceedsTotal {
        /// Lines the CRITICAL entries need.
        required: HalfLines,
        /// The total budget in lines.
        total_lines: u32,
    },
    /// A phase used more than it was allocated (nothing is dropped).
    Overrun {
        /// Phase label.
        phase: String,
        /// Lines allocated to the phase.
        allocated: HalfLines,
        /// Lines used.
        used: HalfLines,
    },
}

impl BudgetFlag {
    /// True for the escalations (to the orchestrator, Zeus).
    pub fn is_escalation(&self) -> bool {
        matches!(self, BudgetFlag::CriticalExceedsTotal { .. })
    }
}

impl fmt::Display for BudgetFlag {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            BudgetFlag::TooManyCritical { phase, count, max } => write!(
                f,
                "Phase {phase} has {count} > {max} CRITICAL entries. Budget risk."
            ),
            BudgetFlag::CriticalExceedsTotal {
                required,
                total_lines,
            } => write!(
                f,
                "CRITICAL entries require {required} lines but budget is {total_lines}. Options: (1) increase budget, (2) increase TOTAL_BUDGET permanently, (3) split phase."
            ),
            BudgetFlag::Overrun {
                phase,
                allocated,
                used,
            } => write!(
                f,
                "Phase {phase} uses {used} lines of a {allocated}-line budget (nothing dropped)."
            ),
        }
    }
}

/// The allocation of one phase.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct PhaseAllocation {
    /// Phase label (`1`, `2a`).
    pub phase: String,
    /// The base budget (before carryover).
    pub base: HalfLines,
    /// Carryover received from the previous phase.
    pub carry_in: HalfLines,
    /// `base + carry_in`.
    pub allocated: HalfLines,
    /// Sum of the entries' lines.
    pub used: HalfLines,
    /// Carryover to the next phase.
    pub carried: HalfLines,
    /// One per input entry, sorted by score descending (ties: input order).
    pub entries: Vec<EntryAllocation>,
    /// Guardrails that fired for this phase.
    pub flags: Vec<BudgetFlag>,
}

impl PhaseAllocation {
    /// The allocation of the entry at input position `index`.
    pub fn entry(&self, index: usize) -> Option<&EntryAllocation> {
        self.entries.iter().find(|e| e.index == index)
    }

    /// Number of entries in `band`.
    pub fn count(&self, band: Band) -> usize {
        self.entries.iter().filter(|e| e.band == band).count()
    }
}

/// The allocation of several consecutive phases.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Allocation {
    /// The phases, in order.
    pub phases: Vec<PhaseAllocation>,
    /// Flags over all phases (the total-budget escalation).
    pub flags: Vec<BudgetFlag>,
}

impl Allocation {
    /// Every flag, of the phases and overall.
    pub fn all_flags(&self) -> impl Iterator<Item = &BudgetFlag> {
        self.phases
            .iter()
            .flat_map(|p| p.flags.iter())
            .chain(self.flags.iter())
    }

    /// Carryover out of the last phase.
    pub fn carried(&self) -> HalfLines {
        self.phases.last().map(|p| p.carried).unwrap_or_default()
    }
}

const CRITICAL_COST: HalfLines = HalfLines::lines(3);
const HIGH_EXPANDED: HalfLines = HalfLines::lines(2);
const LINE: HalfLines = HalfLines::lines(1);
const HALF: HalfLines = HalfLines(1);

fn effective_band(item: &AllocItem) -> Band {
    if item.partial && item.band < Band::Medium {
        Band::Medium
    } else {
        item.band
    }
}

/// The smallest cost of an entry of a band.
fn min_cost(band: Band) -> HalfLines {
    match band {
        Band::Critical => CRITICAL_COST,
        Band::High | Band::Medium => LINE,
        Band::Low => HALF,
    }
}

/// Sorts input positions by score descending; ties keep input order.
fn order(items: &[AllocItem]) -> Vec<usize> {
    let mut idx: Vec<usize> = (0..items.len()).collect();
    idx.sort_by(|&a, &b| {
        let (sa, sb) = (items[a].score, items[b].score);
        sb.cmp(&sa).then(a.cmp(&b))
    });
    idx
}

/// Allocates one phase that received `carry_in` from the previous phase.
pub fn allocate_phase(
    params: &BudgetParams,
    phase: &str,
    carry_in: HalfLines,
    items: &[AllocItem],
) -> PhaseAllocation {
    let base = params.base();
    let allocated = base.plus(carry_in);
    let sorted = order(items);
    let bands: Vec<Band> = sorted.iter().map(|&i| effective_band(&items[i])).collect();

    let critical_count = bands.iter().filter(|&&b| b == Band::Critical).count();
    let critical_total = HalfLines(
        CRITICAL_COST
            .units()
            .saturating_mul(u32::try_from(critical_count).unwrap_or(u32::MAX)),
    );
    // Reserve: the minimum cost of every non-CRITICAL entry not yet placed.
    let mut reserve = bands
        .iter()
        .filter(|&&b| b != Band::Critical)
        .fold(HalfLines(0), |acc, &b| acc.plus(min_cost(b)));
    let mut used = critical_total;
    let mut entries = Vec::with_capacity(items.len());
    for (&i, &band) in sorted.iter().zip(&bands) {
        let item = &items[i];
        let (lines, mode) = match band {
            Band::Critical => (CRITICAL_COST, Mode::Expanded),
            Band::High => {
                reserve = reserve.minus(LINE);
                if used.plus(HIGH_EXPANDED).plus(reserve) <= allocated {
                    (HIGH_EXPANDED, Mode::Expanded)
                } else {
                    (LINE, Mode::Standard)
                }
            }
            Band::Medium => {
                reserve = reserve.minus(LINE);
                (LINE, Mode::Standard)
            }
            Band::Low => {
                reserve = reserve.minus(HALF);
                (HALF, Mode::Aggressive)
            }
        };
        if band != Band::Critical {
            used = used.plus(lines);
        }
        entries.push(EntryAllocation {
            index: i,
            score: item.score,
            band,
            scored_band: item.band,
            lines,
            mode,
            warn: item.partial,
        });
    }

    let mut flags = Vec::new();
    let count = u32::try_from(critical_count).unwrap_or(u32::MAX);
    if count > params.max_critical_per_phase {
        flags.push(BudgetFlag::TooManyCritical {
            phase: phase.to_string(),
            count,
            max: params.max_critical_per_phase,
        });
    }
    if critical_total > HalfLines::lines(params.total_lines) {
        flags.push(BudgetFlag::CriticalExceedsTotal {
            required: critical_total,
            total_lines: params.total_lines,
        });
    }
    if used > allocated {
        flags.push(BudgetFlag::Overrun {
            phase: phase.to_string(),
            allocated,
            used,
        });
    }
    PhaseAllocation {
        phase: phase.to_string(),
        base,
        carry_in,
        allocated,
        used,
        carried: params.carryover(allocated, used),
        entries,
        flags,
    }
}

/// Allocates consecutive phases; each receives the previous one's carryover.
///
/// Besides each phase's flags, the CRITICAL entries of all phases together
/// are checked against the total budget (one escalation, in
/// [`Allocation::flags`], when no single phase already raised it).
pub fn allocate(
    params: &BudgetParams,
    carry_in: HalfLines,
    phases: &[(String, Vec<AllocItem>)],
) -> Allocation {
    let mut carry = carry_in;
    let mut out = Vec::with_capacity(phases.len());
    for (label, items) in phases {
        let p = allocate_phase(params, label, carry, items);
        carry = p.carried;
        out.push(p);
    }
    let mut flags = Vec::new();
    let critical: HalfLines = out
        .iter()
        .flat_map(|p| p.entries.iter())
        .filter(|e| e.band == Band::Critical)
        .fold(HalfLines(0), |acc, e| acc.plus(e.lines));
    let already = out
        .iter()
        .any(|p| p.flags.iter().any(BudgetFlag::is_escalation));
    if !already && critical > HalfLines::lines(params.total_lines) {
        flags.push(BudgetFlag::CriticalExceedsTotal {
            required: critical,
            total_lines: params.total_lines,
        });
    }
    Allocation { phases: out, flags }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn params() -> BudgetParams {
        BudgetParams::from_config(&mnemo_model::Config::default().budget, None)
    }

    #[test]
    fn base_budget_is_twelve_for_eight_phases() {
        assert_eq!(params().base(), HalfLines::lines(12));
        let p = BudgetParams {
            phases: 40,
            ..params()
        };
        assert_eq!(p.base(), HalfLines::lines(5), "floor of 5 lines");
    }

    #[test]
    fn display_half_lines() {
        assert_eq!(HalfLines(11).to_string(), "5.5");
        assert_eq!(HalfLines(8).to_string(), "4");
    }

    #[test]
    fn carryover_in_whole_lines() {
        let p = params();
        assert_eq!(
            p.carryover(HalfLines::lines(12), HalfLines::lines(4)),
            HalfLines::lines(1)
        );
        // 7.5 unused × 20% = 1.5 → 1 line.
        assert_eq!(
            p.carryover(HalfLines::lines(13), HalfLines(11)),
            HalfLines::lines(1)
        );
        assert_eq!(
            p.carryover(HalfLines::lines(12), HalfLines::lines(20)),
            HalfLines(0)
        );
    }
}
