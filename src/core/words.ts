// Counted nouns, as every shell (bundle README, CLI, UI) writes them.

/** "1 service", "3 services". */
export const plural = (count: number, noun: string) => `${count} ${count === 1 ? noun : `${noun}s`}`;
