"""The vocabulary every layer shares: domain events and their JSON, mail statuses, the frozen
records the store answers. It sits below the store: it imports nothing of store/, mail/,
services/, api/ or jobs/, and any of them may import it."""
